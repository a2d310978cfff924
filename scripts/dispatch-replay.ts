// npm run dispatch-replay -- <eventId…> | --flid FLID | --all [--target msg|schd]
// DEAD outbox events back to PENDING (attempts 0): sent again in EVENT_ID order; the FLID's held events follow.
import { loadConfig } from '../lib/config.ts';
import { createDb, createPool } from '../lib/db/postgres.ts';
import { dispatchReplay } from '../lib/dispatch/actions.ts';
import { parseOperatorArgs } from './args.ts';

const config = loadConfig();
const pool = createPool(config.DATABASE_URL, { max: 1 });
try {
  const a = parseOperatorArgs(process.argv.slice(2), ['--flid', '--target'], ['--all']);
  const ids = await dispatchReplay(createDb(pool), {
    eventIds: a.ids.length ? a.ids : undefined,
    flid: a.options['--flid'],
    all: a.flags.has('--all') || undefined,
    target: a.options['--target'] as 'msg' | 'schd' | undefined,
  });
  console.log(`replayed ${ids.length} event(s)${ids.length ? ': ' + ids.join(' ') : ''}`);
} catch (e) {
  console.error(`dispatch-replay: ${(e as Error).message}`);
  process.exitCode = 2;
} finally {
  await pool.end();
}
