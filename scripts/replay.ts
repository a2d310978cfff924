// npm run replay -- <msgId…> | --state FAILED|DEAD [--reason PREFIX] [--force]
// Moves whitelisted FAILED / DEAD(EXHAUSTED) messages back to PENDING (DEAD(MALFORMED|PROTOCOL) only with --force).
import { systemClock } from '../lib/clock.ts';
import { loadConfig } from '../lib/config.ts';
import { createDb, createPool } from '../lib/db/postgres.ts';
import { replayMessages } from '../lib/pipeline/operator.ts';
import { parseOperatorArgs } from './args.ts';

const a = parseOperatorArgs(process.argv.slice(2), ['--state', '--reason'], ['--force']);
const config = loadConfig();
const pool = createPool(config.DATABASE_URL, { max: 1 });
try {
  const state = a.options['--state'];
  if (state && state !== 'FAILED' && state !== 'DEAD') throw new Error('--state must be FAILED or DEAD');
  const ids = await replayMessages(createDb(pool), systemClock, { ids: a.ids, state: state as 'FAILED' | 'DEAD' | undefined, reason: a.options['--reason'], force: a.flags.has('--force') });
  console.log(`replayed ${ids.length} message(s)${ids.length ? ': ' + ids.join(' ') : ''}`);
} catch (e) {
  console.error(`replay: ${(e as Error).message}`);
  process.exitCode = 2;
} finally {
  await pool.end();
}
