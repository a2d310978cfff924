// npm run dispatch-resend -- --from <EVENT_ID> [--to <EVENT_ID>] [--acknowledge] | --acknowledge   (--help: usage)
// After msg-dispatch found that the msg topic lost records (docs/operations.md "Derived stores:
// the msg topic"): sends a range of EVENT_IDs again from the outbox, in order per FLID, as
// duplicates consumers ignore, and closes the losses the range covers; or accepts the loss.
import { slices } from '../lib/core/config.ts';
import { ResendRefused, resendMsgEvents } from '../lib/dispatch/resend.ts';
import { runOperatorCli, UsageError, type CliSpec } from './args.ts';

const spec: CliSpec = {
  name: 'dispatch-resend',
  valued: ['--from', '--to'],
  flags: ['--acknowledge'],
  positional: 'none',
  usage: `usage: npm run dispatch-resend -- --from <EVENT_ID> [--to <EVENT_ID>] [--acknowledge]
       npm run dispatch-resend -- --acknowledge
  Sends msg events again from the outbox (those kept within msgx.pipeline.event-retention), in
  EVENT_ID order per FLID, with their own EVENT_ID: duplicates the consumer rules ignore. Closes
  the msg topic losses msg-dispatch found that the range covers (docs/operations.md "Derived
  stores: the msg topic").
  --from ID       the first EVENT_ID to send again (the loss's first, as /healthz names it)
  --to ID         the last one (default: the newest event, so every flight's later events follow in order)
  --acknowledge   close every open loss (with --from: after the resend; alone: nothing is sent)
Prints one line. Exit 0 when done, 1 when the range is beyond retention or nothing was done,
2 on bad arguments.`,
};

const id = (flag: string, v: string | undefined): number | undefined => {
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(Number(v)) || Number(v) < 1) throw new UsageError(`${flag} needs an EVENT_ID (a whole number ≥ 1), not ${v}`);
  return Number(v);
};

await runOperatorCli(spec, async (db, args, config) => {
  const from = id('--from', args.options['--from']);
  const to = id('--to', args.options['--to']);
  const acknowledge = args.flags.has('--acknowledge');
  if (from === undefined && !acknowledge) throw new UsageError(to !== undefined ? '--to needs --from' : 'give --from <EVENT_ID> or --acknowledge');
  if (from !== undefined && to !== undefined && to < from) throw new UsageError(`--to ${to} is below --from ${from}`);
  try {
    const r = await resendMsgEvents(db, { topic: slices(config).kafka.msgTopic, from, to, acknowledge, now: new Date() });
    const sent = r.range ? `resent ${r.events} event(s) of ${r.flids} flight(s), EVENT_ID ${r.range.from}..${r.range.to}` : 'resent nothing';
    const closed = `closed ${r.closed.length} loss(es)${r.closed.length ? `: ${r.closed.map((l) => `${l.first}..${l.last}`).join(' ')}` : ''}`;
    const notes = r.open.map((l) => `loss ${l.first}..${l.last} still open: the range does not cover it (resend from ${l.first}, or --acknowledge)`);
    if (r.range && r.events === 0) notes.push(`no SENT msg event in ${r.range.from}..${r.range.to} (PENDING, DEAD and SKIPPED events are left as they are)`);
    return { out: `${sent}; ${closed}`, notes, ok: r.events > 0 || r.closed.length > 0 };
  } catch (e) {
    if (e instanceof ResendRefused) return { out: 'resent nothing', notes: [e.message], ok: false };
    throw e;
  }
});
