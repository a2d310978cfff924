// npm run dispatch-skip -- <eventId…> | --flid FLID | --all [--target msg|schd]
// DEAD outbox events → SKIPPED (kept, visible): never sent; the FLID's held events are released.
import { dispatchSkip } from '../lib/dispatch/actions.ts';
import { dispatchSelection, listed, runOperatorCli } from './args.ts';

await runOperatorCli('dispatch-skip', async (db) => listed('skipped', 'event(s)', await dispatchSkip(db, dispatchSelection(process.argv.slice(2)))));
