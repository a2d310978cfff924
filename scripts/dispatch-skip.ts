// npm run dispatch-skip -- <eventId…> | --flid FLID | --all [--target msg|schd|state]   (--help: usage)
// DEAD outbox events → SKIPPED (kept, visible): never sent; the FLID's held events are released.
import { dispatchSkipReport } from '../lib/dispatch/actions.ts';
import { dispatchSelection, dispatchSpec, listed, runOperatorCli } from './args.ts';

const spec = dispatchSpec('dispatch-skip', "Gives up on DEAD outbox events (kept as SKIPPED, never sent); the flight's held events are released.");
await runOperatorCli(spec, async (db, args) => {
  const r = await dispatchSkipReport(db, dispatchSelection(args));
  return { out: listed('skipped', 'event(s)', r.done), notes: r.untouched, ok: r.done.length > 0 && !(r.byIds && r.untouched.length > 0) };
});
