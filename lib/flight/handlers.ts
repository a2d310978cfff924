// Flight-domain handlers (pipeline.md step 4): SCHD DNLD/RESP (snapshot), SCHD ADFT (set-only
// upsert), FLOP (merge; FDEL = delete path). Each runs in the pump's business transaction and
// returns the Redis scope (mirror) and the dispatcher wake-ups.
import type { Handler, HandlerContext, HandlerOutcome, HandlerRegistry } from '../pipeline/handlers.ts';
import { DISPATCH_TASK } from '../dispatch/tasks.ts';
import { scheduleResponseGuard } from '../requests/schedule-guard.ts';
import { FlightBatch } from './batch.ts';
import { decodeFlop, decodeSchedule, isHandledFlopStyp } from './decode.ts';
import { applySnapshot, isLatestSnapshot, validateSnapshot } from './ledger.ts';
import { applyAdft, applyFlop, deleteFlight, type MergeContext } from './merge.ts';
import { countDecodeNotes } from './metrics.ts';

const DISPATCH_TASKS = [DISPATCH_TASK.msg, DISPATCH_TASK.schd];

function mergeContext(ctx: HandlerContext): MergeContext {
  return { msgId: ctx.msgId, now: ctx.now, timeZone: ctx.config['msgx.airport.timezone'], cutover: ctx.config['msgx.airport.day-cutover'] };
}

const applied = (mirror: string[], events: number): HandlerOutcome => ({
  outcome: 'applied',
  mirror,
  ...(events > 0 ? { wake: DISPATCH_TASKS } : {}),
});

/** SCHD DNLD / RESP: the snapshot ledger. */
export const handleSnapshot: Handler = async (ctx) => {
  const mctx = mergeContext(ctx);
  const styp = ctx.env.styp as 'DNLD' | 'RESP';
  const msg = decodeSchedule(ctx.env, { timeZone: mctx.timeZone });
  countDecodeNotes(ctx.env.type, styp, msg.notes);
  let day = validateSnapshot(msg, mctx); // INV-4: PROTOCOL before any write
  // A re-application of the latest snapshot (crash after the business commit) is a no-op that
  // repairs Redis; it must not be turned away by the request guard, which it already satisfied.
  if (day === null || !(await isLatestSnapshot(ctx.tx, day, ctx.msgId))) {
    const guard = await scheduleResponseGuard(ctx.tx, { styp, operationDay: day, msgId: ctx.msgId, now: ctx.now });
    if (!guard.apply) return { outcome: 'skipped', reason: guard.reason };
    day = guard.operationDay;
    if (day === null) return { outcome: 'skipped', reason: 'no-open-request' };
  }
  const out = await applySnapshot(ctx.tx, msg, day, mctx);
  ctx.log.info({ operationDay: day, replay: out.replay, version: out.version, changed: out.changed.length, deleted: out.deleted.length }, 'snapshot applied');
  return applied(out.mirror, out.events);
};

/** SCHD ADFT: set-only upsert of the records carried (creates, revives). */
export const handleAdft: Handler = async (ctx) => {
  const mctx = mergeContext(ctx);
  const msg = decodeSchedule(ctx.env, { timeZone: mctx.timeZone });
  countDecodeNotes(ctx.env.type, ctx.env.styp, msg.notes);
  const batch = new FlightBatch(ctx.tx, mctx);
  await batch.load(msg.records.map((r) => r.flid));
  for (const r of msg.records) {
    batch.address(r.flid, true);
    batch.record(applyAdft(batch.get(r.flid), r.flid, r.patch, mctx));
  }
  const res = await batch.finish({ type: ctx.env.type, styp: ctx.env.styp });
  return applied(res.related, res.events);
};

/** FLOP: one flight's operation event; FDEL deletes. */
export const handleFlop: Handler = async (ctx) => {
  const styp = ctx.env.styp;
  if (!isHandledFlopStyp(styp)) return { outcome: 'skipped', reason: 'unsupported' };
  const mctx = mergeContext(ctx);
  const msg = decodeFlop(ctx.env, { timeZone: mctx.timeZone });
  countDecodeNotes(ctx.env.type, styp, msg.notes);
  const batch = new FlightBatch(ctx.tx, mctx);
  await batch.load([msg.flid]);
  const state = batch.get(msg.flid);
  if (!state) return { outcome: 'skipped', reason: 'no-flight' };
  if (state.STATE === 'DELETED') return { outcome: 'skipped', reason: 'no-flight:deleted' };
  batch.address(msg.flid, !msg.delete);
  batch.record(msg.delete ? deleteFlight(state, mctx) : applyFlop(state, msg.patch, mctx));
  const res = await batch.finish({ type: ctx.env.type, styp });
  return applied(res.related, res.events);
};

export function registerFlightHandlers(registry: HandlerRegistry): HandlerRegistry {
  return registry
    .register('SCHD', 'DNLD', handleSnapshot)
    .register('SCHD', 'RESP', handleSnapshot)
    .register('SCHD', 'ADFT', handleAdft)
    .register('FLOP', '*', handleFlop);
}
