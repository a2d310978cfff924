// npm run dispatch-replay -- <eventId…> | --flid FLID | --all [--target msg|schd]
// DEAD outbox events back to PENDING (attempts 0): sent again in EVENT_ID order; the FLID's held events follow.
import { dispatchReplay } from '../lib/dispatch/actions.ts';
import { dispatchSelection, listed, runOperatorCli } from './args.ts';

await runOperatorCli('dispatch-replay', async (db) => listed('replayed', 'event(s)', await dispatchReplay(db, dispatchSelection(process.argv.slice(2)))));
