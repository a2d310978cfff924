// npm run backfill-resume -- <msgId…> | --reason MISSING_ROW|TRANSIENT_DEADLINE
import { systemClock } from '../lib/clock.ts';
import { loadConfig } from '../lib/config.ts';
import { createDb, createPool } from '../lib/db/postgres.ts';
import { resumeBackfills } from '../lib/pipeline/operator.ts';
import { parseOperatorArgs } from './args.ts';

const a = parseOperatorArgs(process.argv.slice(2), ['--reason'], []);
const config = loadConfig();
const pool = createPool(config.DATABASE_URL, { max: 1 });
try {
  const reason = a.options['--reason'];
  if (reason && reason !== 'MISSING_ROW' && reason !== 'TRANSIENT_DEADLINE') throw new Error('--reason must be MISSING_ROW or TRANSIENT_DEADLINE');
  const ids = await resumeBackfills(createDb(pool), systemClock, { ids: a.ids, reason: reason as 'MISSING_ROW' | undefined });
  console.log(`resumed ${ids.length} backfill(s)${ids.length ? ': ' + ids.join(' ') : ''}`);
} catch (e) {
  console.error(`backfill-resume: ${(e as Error).message}`);
  process.exitCode = 2;
} finally {
  await pool.end();
}
