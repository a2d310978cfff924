// The batch model: a message of the batch as the pump knows it (MessageRef), what is to be done
// with it (Todo, decided by `prepare` from its decoding: pure), and the message that ends the
// batch for a retryable reason (Cut).
import type { Logger } from 'pino';
import type { Failure, ReasonClass } from '../../core/errors.ts';
import type { BatchDomain, Handler } from '../../domain/handlers.ts';
import type { Envelope } from '../../sis/envelope.ts';
import type { Decoded } from '../decoding.ts';
import { ownOutcome, RAW_MISSING, type Reason } from '../failures.ts';
import type { HeadRow, TerminalState } from '../../sql/proc-state.ts';
import type { PumpDeps } from './deps.ts';
import { traceField } from '../../runtime/tracing.ts';

/** A message of the batch as its log lines and its failure record know it. */
export interface MessageRef {
  h: HeadRow;
  /** Fields on every log line of this message (msgId, kind, flid); the child logger is made only when a line is written (logOf). */
  logFields: Record<string, unknown>;
  kind: string | null;
  /** The identity key this message binds when it commits (null: bound already, or no envelope). */
  identityToBind: string | null;
}

/** A batch domain and the message's command for it. */
export interface DomainWork {
  domain: BatchDomain<unknown>;
  cmd: unknown;
}

/** What is to be done with a message of the batch (decided by `prepare` from its decoding). */
export type Todo =
  /** Its business step committed before (a crash after it): mirror its flights (`work`: which ones; null: none) and make it terminal. */
  | { do: 'recover'; state: TerminalState; reason: string | null; reasonClass: ReasonClass | null; work: DomainWork | null }
  /** Its outcome is known without a business effect (its own failure, unsupported). */
  | ({ do: 'outcome'; state: TerminalState } & Reason)
  /** Applied by a transaction handler, in a savepoint of its own. */
  | { do: 'tx'; handler: Handler; env: Envelope }
  /** Applied by its batch domain. */
  | { do: 'apply'; work: DomainWork; env: Envelope };

export interface Member extends MessageRef {
  todo: Todo;
  /** A batch of its own (a snapshot). */
  ownBatch: boolean;
}

/** The message that ended the batch for a retryable reason: it becomes the next head, FAILED. */
export interface Cut {
  ref: MessageRef;
  failure: Failure;
}

/** A message's body and what decoding it gave ('missing': no inbox row). Absent from a map: not decoded yet. */
export type Body = { body: string; dec: Decoded } | 'missing';

export const workOf = (t: Todo): DomainWork | null => (t.do === 'apply' || t.do === 'recover' ? t.work : null);

export function refOf(h: HeadRow): MessageRef {
  return { h, logFields: { msgId: h.msg_id, ...traceField(h.trace_context) }, kind: h.kind, identityToBind: null };
}

/** The batch's members in order, up to the first that ends it: a retryable failure (the Cut), or a batch of its own. */
export function prepareBatch(deps: PumpDeps, heads: HeadRow[], bodies: Map<number, Body>): { members: Member[]; cut: Cut | null } {
  const members: Member[] = [];
  for (const row of heads) {
    const body = bodies.get(row.msg_id);
    if (body === undefined) break; // not decoded: it follows a snapshot, a later batch takes it
    const p = prepare(deps, row, body);
    if ('failure' in p) return { members, cut: p };
    if (p.ownBatch && members.length > 0) break;
    members.push(p);
    if (p.ownBatch) break;
  }
  return { members, cut: null };
}

/** The decode step's verdict for one message (pure): what is to be done with it, or the retryable failure that ends the batch before it. */
export function prepare(deps: PumpDeps, h: HeadRow, b: Body): Member | Cut {
  const ref = refOf(h);
  const outcome = (m: MessageRef, state: TerminalState, why: Reason): Member => ({ ...m, todo: { do: 'outcome', state, ...why }, ownBatch: false });
  if (b === 'missing') return outcome(ref, 'DEAD', RAW_MISSING);
  const dec = b.dec;
  if (!dec.ok) {
    const own = ownOutcome(dec.failure);
    return own ? outcome(ref, own.state, own) : { ref, failure: dec.failure };
  }
  const entry = deps.registry.entry(dec.env.type, dec.env.styp);
  const known: MessageRef = {
    h,
    kind: dec.kind,
    logFields: { msgId: h.msg_id, kind: dec.kind, ...(dec.flid ? { flid: dec.flid } : {}), ...traceField(h.trace_context) },
    identityToBind: h.identity_key ? null : dec.identity,
  };
  const member = (todo: Todo, ownBatch = false): Member => ({ ...known, todo, ownBatch });
  if (!entry) return member({ do: 'outcome', state: 'SKIPPED', reason: 'unsupported', reasonClass: 'UNSUPPORTED' });
  if (entry.kind === 'tx') return member({ do: 'tx', handler: entry.handler, env: dec.env });
  const recover = (work: DomainWork | null): Todo | null => (h.applied_state ? { do: 'recover', state: h.applied_state, reason: h.applied_reason, reasonClass: h.applied_reason_class, work } : null);
  if (dec.failure) {
    const recovered = recover(null);
    if (recovered) return member(recovered);
    const own = ownOutcome(dec.failure);
    return own ? member({ do: 'outcome', state: own.state, reason: own.reason, reasonClass: own.reasonClass }) : { ref: known, failure: dec.failure };
  }
  const work = { domain: entry.domain, cmd: dec.cmd };
  return member(recover(work) ?? { do: 'apply', work, env: dec.env }, !h.applied_state && entry.domain.ownBatch(dec.cmd));
}

const loggers = new WeakMap<MessageRef, Logger>();
/** The message's child logger (its logFields on every line), made on first use. */
export function logOf(deps: PumpDeps, m: MessageRef): Logger {
  let l = loggers.get(m);
  if (!l) loggers.set(m, (l = deps.log.child(m.logFields)));
  return l;
}
