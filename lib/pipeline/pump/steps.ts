// applyBatch, PIPELINE_LOCK held by the caller (loop.ts): the pump's steps in order, with the
// names of docs/design.md "The pump's steps", and nothing else:
//   chooseBatch  the head and the open messages after it                        choose.ts
//   read         the raw bodies, one inbox query                     fails → FAILED(INFRA, mariadb)
//   decode       deps.decoder, in order, under the per-message budget; `prepare` turns each
//                decoding into a Todo (batch.ts); the next batch read and decoded ahead  ahead.ts
//   business     ONE transaction                                                  business.ts
//   mirror       ONE Redis sync for every flight the batch addresses             terminal.ts
//   terminal     ONE statement: every applied outcome becomes terminal           terminal.ts
//   tail         in drain, the mirror and terminal steps run while the next batch is chosen, read
//                and applied (its ordering rules: tail.ts).
// A message found with APPLIED_STATE set (a crash after its business step) is not applied again
// (Todo 'recover'): its flights are mirrored from Postgres and its outcome made terminal.
import { classify, describe } from '../../core/errors.ts';
import { countAfterCommit } from '../../runtime/metrics.ts';
import { type Ahead, heapMark, isLarge, readAndDecode, readAheadAfter } from './ahead.ts';
import { type Body, type Member, prepareBatch, refOf } from './batch.ts';
import { type Business, business } from './business.ts';
import { chooseBatch } from './choose.ts';
import { type BatchResult, type Done, done, type PumpDeps, stopwatch } from './deps.ts';
import { MirrorBehind, overlapsNext, type TailGate } from './tail.ts';
import { fail, mirrorFailure, settleTail, startTail, terminal } from './terminal.ts';

export { settleTail } from './terminal.ts';

/** What a batch carries over from the one before: the read ahead (drain) and the tail (overlapping only in drain). */
export interface Carry {
  ahead: Ahead | null;
  tail: TailGate<Member>;
  /** The mirror and terminal steps may run while the next batch does (drain); tick ends every step first. */
  overlap: boolean;
}

export async function applyBatch(deps: PumpDeps, limit: number, carry: Carry): Promise<BatchResult> {
  const lap = stopwatch(deps.timings);
  const chosen = await chooseBatch(deps, limit, carry.ahead, carry.tail.excluded());
  lap('heads');
  if (chosen.kind !== 'batch') return chosen;
  const { heads, following } = chosen;
  const head = heads[0];
  deps.tracer?.begin(heads);
  const started = performance.now();
  const heap = heapMark();
  let bodies: Map<number, Body>;
  try {
    bodies = await readAndDecode(deps, heads, carry.ahead);
    lap('bodies+decode');
    deps.tracer?.step(head, 'decode');
  } catch (err) {
    return done([await fail(deps, refOf(head), { cls: 'INFRA', service: 'mariadb', detail: `inbox read failed: ${describe(err)}` })]);
  }
  const { members, cut: decodeCut } = prepareBatch(deps, heads, bodies);
  lap('prepare');
  if (members.length === 0) return done([await fail(deps, decodeCut?.ref ?? refOf(head), decodeCut?.failure ?? { cls: 'INTERNAL', detail: 'the head was not decoded' })]); // never expected: the head is always decoded
  readAheadAfter(deps, carry.ahead, { whole: !decodeCut && members.length === heads.length, following });
  let biz: Business;
  try {
    biz = await business(deps, members, carry.tail.commitGate());
    lap('business');
    deps.tracer?.step(head, 'business');
  } catch (err) {
    if (err instanceof MirrorBehind) return done(await settleTail(deps, carry.tail)); // rolled back: the batch before failed its mirror step
    if (members.length > 1) {
      deps.log.warn({ err: describe(err), batch: members.length, from: head.msg_id }, 'batch rolled back; trying again smaller');
      return { kind: 'done', done: [], retrySmaller: Math.max(1, Math.floor(members.length / 2)) };
    }
    return done([await fail(deps, members[0], classify(err, 'handler', 'postgres'))]);
  }
  const applied = members.slice(0, biz.count);
  const cut = biz.cut ?? decodeCut;
  for (const counts of biz.counts) countAfterCommit(counts);
  // the batch before: its terminal step ends (it ran while this one's business step did)
  const out: Done[] = await settleTail(deps, carry.tail);
  if (applied.length > 0) {
    deps.crash?.('pump.after-business-commit');
    const large = members.length === 1 && isLarge(bodies.get(head.msg_id));
    if (overlapsNext({ drain: carry.overlap, cut: cut !== null, large })) {
      startTail(deps, carry.tail, applied, biz, started);
      return done(out);
    }
    try {
      await deps.mirror.sync(biz.mirror, biz.known);
      lap('mirror');
      deps.tracer?.step(head, 'mirror');
    } catch (err) {
      return done([...out, await fail(deps, applied[0], mirrorFailure(err))]);
    }
    deps.crash?.('pump.before-terminal');
    out.push(...(await terminal(deps, deps.session, applied, started)));
    lap('terminal');
    if (large && heap.release()) lap('release');
  }
  if (cut) out.push(await fail(deps, cut.ref, cut.failure));
  return { kind: 'done', done: out };
}
