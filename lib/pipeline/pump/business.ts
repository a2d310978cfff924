// The business step: ONE transaction for the batch. The owners of the batch's identities (one
// read), every message applied in order (batch domains in memory, transaction handlers in a
// savepoint each), every message's outcome + identity binding + dispatcher wake-ups (one
// statement, sent first so that Postgres runs it while the domains build their net writes), then
// the domains' net writes. A message's own failure is its outcome and the batch goes on; a
// retryable one (INFRA, INTERNAL) ends the batch before that message.
import { classify, type Failure, type ReasonClass } from '../../core/errors.ts';
import type { BatchDomain, DomainBatch, Handler, HandlerOutcome } from '../../domain/handlers.ts';
import type { AfterCommitCounts } from '../../runtime/labels.ts';
import { ownOutcome } from '../failures.ts';
import * as ProcState from '../../sql/proc-state.ts';
import type { TerminalState } from '../../sql/proc-state.ts';
import * as Jobs from '../../sql/jobs.ts';
import * as Transitions from '../../sql/transitions.ts';
import { type Cut, logOf, type Member, workOf } from './batch.ts';
import type { PumpDeps } from './deps.ts';

export interface Business {
  /** Members that commit (a prefix of the batch). */
  count: number;
  /** The member that ended the batch for a retryable reason (not committed). */
  cut: Cut | null;
  /** Every flight the committed members address. */
  mirror: string[];
  /** Metrics to count now that the business transaction committed (once per message). */
  counts: AfterCommitCounts[];
  /** Committed states of flights the batch loaded (the mirror step need not read them back). */
  known: ReadonlyMap<string, unknown>;
  batches: DomainBatch<unknown>[];
}

type Tx = Parameters<Handler>[0]['tx'];
type Batches = Map<BatchDomain<unknown>, DomainBatch<unknown>>;
type Applied = { state: TerminalState; reason: string | null; reasonClass: ReasonClass | null; mirror?: string[]; wake?: string[]; counts?: AfterCommitCounts } | { state: 'RETRY'; failure: Failure };

/** Lets a statement just issued reach the socket (the driver's queue runs on microtasks) before the caller's next synchronous work. */
const issued = () => new Promise<void>((resolve) => setImmediate(resolve));

const nothing = (cut: Cut | null): Business => ({ count: 0, cut, mirror: [], counts: [], known: new Map(), batches: [] });

/** The business step (`beforeCommit` runs last inside the transaction; throwing rolls it back). No member left to commit: rolled back, count 0. */
export async function business(deps: PumpDeps, members: Member[], beforeCommit?: () => Promise<void>): Promise<Business> {
  const now = deps.clock.now();
  const rollback = Symbol('nothing to commit');
  let cut: Cut | null = null;
  try {
    const result = await deps.session.transaction().execute(async (tx) => {
      // identity (INV-6): who owns the batch's keys already; within the batch, the first message of a key
      const keys = [...new Set(members.flatMap((member) => (member.identityToBind ? [member.identityToBind] : [])))];
      const owners = new Map(keys.length === 0 ? [] : (await ProcState.readIdentityOwners(tx, keys)).map((x) => [x.identity_key, x.msg_id]));
      const ownerOf = (member: Member): number | undefined => (member.identityToBind ? Transitions.claimIdentity(owners, member.identityToBind, member.h.msg_id) : undefined);
      const batches = await openDomains(deps, tx, members, now);
      const outcomes: Transitions.AppliedOutcome[] = [];
      const mirror = new Set<string>();
      const wake = new Set<string>();
      const counts: AfterCommitCounts[] = [];
      for (const member of members) {
        const id = member.h.msg_id;
        const owner = ownerOf(member);
        const applied: Applied = owner !== undefined && owner !== id ? { state: 'SKIPPED', reason: `duplicate-of:${owner}`, reasonClass: 'DUPLICATE' } : await applyOne(deps, tx, member, batches, now);
        if (applied.state === 'RETRY') {
          cut = { ref: member, failure: applied.failure };
          break;
        }
        outcomes.push({ msgId: id, state: applied.state, reason: applied.reason, reasonClass: applied.reasonClass, kind: member.kind, identityKey: owner === id ? member.identityToBind : null });
        for (const flid of applied.mirror ?? []) mirror.add(flid);
        for (const task of applied.wake ?? []) wake.add(task);
        if (applied.counts) counts.push(applied.counts);
      }
      if (outcomes.length === 0) throw rollback;
      // the outcomes are recorded while the domains build their writes: the statement is on its
      // way before their synchronous work starts (the writes queue behind it on the connection)
      const recorded = Transitions.recordApplied(tx, outcomes, now, wake);
      recorded.catch(() => undefined); // awaited below, first: its error is the one thrown
      await issued();
      const known = new Map<string, unknown>();
      const late = new Set<string>();
      try {
        for (const batch of batches.values()) {
          const written = await batch.write();
          for (const task of written.wake) if (!wake.has(task)) late.add(task);
          for (const [flid, state] of written.states ?? []) known.set(flid, state);
        }
      } catch (err) {
        await recorded;
        throw err;
      }
      await recorded;
      if (late.size > 0) await Jobs.wakeAll(tx, late); // a domain that named a wake-up only at its write
      await beforeCommit?.();
      return { count: outcomes.length, cut, mirror: [...mirror], counts, known, batches: [...batches.values()] };
    });
    for (const batch of result.batches) batch.committed?.();
    return result;
  } catch (err) {
    deps.registry.resetDomains();
    if (err === rollback) return nothing(cut);
    throw err;
  }
}

/** Each batch domain of the batch opened once, with everything its messages address loaded up front. */
async function openDomains(deps: PumpDeps, tx: Tx, members: Member[], now: Date): Promise<Batches> {
  const byDomain = new Map<BatchDomain<unknown>, { cmds: unknown[]; recovered: number[] }>();
  for (const member of members) {
    const work = workOf(member.todo);
    if (!work) continue;
    let mine = byDomain.get(work.domain);
    if (!mine) byDomain.set(work.domain, (mine = { cmds: [], recovered: [] }));
    mine.cmds.push(work.cmd);
    if (member.todo.do === 'recover') mine.recovered.push(member.h.msg_id);
  }
  const batches: Batches = new Map();
  for (const [domain, mine] of byDomain) {
    const batch = domain.open({ tx, now, airport: deps.airport, log: deps.log });
    await batch.preload(mine.cmds, mine.recovered);
    batches.set(domain, batch);
  }
  return batches;
}

/** The open batch of a domain (openDomains opened one for every domain a member's work names). */
function batchOf(batches: Batches, domain: BatchDomain<unknown>): DomainBatch<unknown> {
  const batch = batches.get(domain);
  if (!batch) throw new Error('no open batch for a domain of the batch');
  return batch;
}

/** One message inside the business transaction. */
async function applyOne(deps: PumpDeps, tx: Tx, member: Member, batches: Batches, now: Date): Promise<Applied> {
  const todo = member.todo;
  const log = () => logOf(deps, member);
  switch (todo.do) {
    case 'recover':
      // applied before (crash after its business commit): its flights, from the current state
      return {
        state: todo.state,
        reason: todo.reason,
        reasonClass: todo.reasonClass,
        mirror: todo.work ? await batchOf(batches, todo.work.domain).addressed({ msgId: member.h.msg_id, cmd: todo.work.cmd }) : [],
      };
    case 'outcome':
      return { state: todo.state, reason: todo.reason, reasonClass: todo.reasonClass };
    case 'apply':
      try {
        const batch = batchOf(batches, todo.work.domain);
        return fromHandler(
          await batch.apply({
            msgId: member.h.msg_id,
            env: todo.env,
            cmd: todo.work.cmd,
            get log() {
              return log();
            },
          }),
        );
      } catch (err) {
        return fromError(err);
      }
    case 'tx': {
      // a savepoint per message: a skip or a failure takes back its writes and nothing else
      const run = async (): Promise<Applied> => {
        try {
          return fromHandler(
            await todo.handler({
              tx,
              msgId: member.h.msg_id,
              env: todo.env,
              now,
              airport: deps.airport,
              get log() {
                return log();
              },
            }),
          );
        } catch (err) {
          return fromError(err);
        }
      };
      return deps.ports.inSavepoint(tx, run, (r) => r.state === 'SUCCEEDED');
    }
  }
}

function fromHandler(o: HandlerOutcome): Applied {
  if (o.outcome === 'skipped') return { state: 'SKIPPED', reason: o.reason, reasonClass: 'SKIPPED', mirror: o.mirror };
  return { state: 'SUCCEEDED', reason: null, reasonClass: null, mirror: o.mirror, wake: o.wake, counts: o.counts };
}

/** A failure inside the business transaction: the message's own (its outcome), or retryable (ends the batch). */
function fromError(e: unknown): Applied {
  const f = classify(e, 'handler', 'postgres');
  const own = ownOutcome(f);
  return own ? { state: own.state, reason: own.reason, reasonClass: own.reasonClass } : { state: 'RETRY', failure: f };
}
