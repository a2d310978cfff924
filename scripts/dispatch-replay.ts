// npm run dispatch-replay -- <eventId…> | --flid FLID | --all [--target msg|schd|state]   (--help: usage)
// DEAD outbox events back to PENDING (attempts 0): sent again in EVENT_ID order; the FLID's held events follow.
import { dispatchReplayReport } from '../lib/dispatch/actions.ts';
import { dispatchSelection, dispatchSpec, listed, runOperatorCli } from './args.ts';

const spec = dispatchSpec('dispatch-replay', "Sends DEAD outbox events again, in EVENT_ID order; the flight's held events follow them.");
await runOperatorCli(spec, async (db, args) => {
  const r = await dispatchReplayReport(db, dispatchSelection(args));
  return { out: listed('replayed', 'event(s)', r.done), notes: r.untouched, ok: r.done.length > 0 && !(r.byIds && r.untouched.length > 0) };
});
