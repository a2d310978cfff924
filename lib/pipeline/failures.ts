// The one failure component: given a failure of the head message, decide its next state.
// Implements the failure classes of docs/design.md; the pump only executes the decision.
import type { Slices } from '../core/config.ts';
import type { Failure, ReasonClass, Service } from '../core/errors.ts';

/** A reason and its class (REASON_CLASS), written together. */
export interface Reason {
  reason: string;
  reasonClass: ReasonClass;
}

export type Decision = ({ next: 'DEAD'; countAttempt: boolean } & Reason) | ({ next: 'FAILED'; countAttempt: boolean; retryInMs: number } & Reason);

export interface FailureHistory {
  /** Counted attempts so far (INFRA excluded). */
  attempts: number;
  /** Consecutive failures so far, INFRA included. */
  failuresInRow: number;
}

export function reasonOf(f: Failure): string {
  return `${f.cls}: ${f.detail}`;
}

/**
 * A failure that is the message's own (MALFORMED, PROTOCOL): its outcome is DEAD with this
 * reason, whether it is found while decoding, in the business transaction or by the failure
 * record; null: a failure of the moment (INFRA, CODEC_ERROR, INTERNAL), which is retried.
 */
export function ownOutcome(f: Failure): ({ state: 'DEAD' } & Reason) | null {
  return f.cls === 'MALFORMED' || f.cls === 'PROTOCOL' ? { state: 'DEAD', reason: reasonOf(f), reasonClass: f.cls } : null;
}

export function decide(f: Failure, h: FailureHistory, policy: Slices['failures']): Decision {
  const ladder = policy.backoffMs;
  const max = policy.maxAttempts;
  const own = ownOutcome(f);
  if (own) return { next: own.state, reason: own.reason, reasonClass: own.reasonClass, countAttempt: false };
  switch (f.cls) {
    case 'INFRA': {
      // Never exhausts: climb the ladder, then stay at its last step for as long as it takes.
      const step = Math.min(h.failuresInRow, ladder.length - 1);
      return { next: 'FAILED', reason: reasonOf(f), reasonClass: f.cls, countAttempt: false, retryInMs: ladder[Math.max(0, step)] ?? 1000 };
    }
    default: {
      // CODEC_ERROR, INTERNAL: counted attempts, then EXHAUSTED
      const attempts = h.attempts + 1;
      if (attempts >= max) return { next: 'DEAD', reason: `EXHAUSTED(${f.cls}): ${f.detail}`, reasonClass: 'EXHAUSTED', countAttempt: true };
      return { next: 'FAILED', reason: reasonOf(f), reasonClass: f.cls, countAttempt: true, retryInMs: ladder[attempts - 1] };
    }
  }
}

/**
 * While a FAILED head waits for its next attempt: the service to ask whether it answers again
 * (then it is tried at once), from the failure as recorded — an INFRA failure that carried its
 * service. Null: wait for the backoff (a lock or statement timeout, or any other class).
 */
export function probeTarget(h: { error_class: string | null; error_service: Service | null }): Service | null {
  return h.error_class === 'INFRA' ? h.error_service : null;
}

/** A FAILED head whose counted attempts are already used up (e.g. max-attempts lowered) → DEAD(EXHAUSTED). */
export function isExhausted(h: { attempts: number; errorClass: string | null }, policy: Slices['failures']): boolean {
  return h.errorClass !== 'INFRA' && h.attempts >= policy.maxAttempts;
}

/**
 * The reason of a message whose inbox row was gone when the pump came to read it: it was never
 * applied, so the inbox must never be told it was processed (backfill leaves it, abandoned as
 * MISSING_ROW; backfill-resume refuses it). When the row is back, replay with force applies it.
 */
export const RAW_MISSING: Reason = { reason: 'MALFORMED: raw-missing', reasonClass: 'RAW_MISSING' };
/** The DEAD classes that replay takes only with force (the message's own failure, or never read): ProcState.replay's whitelist. */
export const REPLAY_NEEDS_FORCE: ReadonlySet<ReasonClass> = new Set(['MALFORMED', 'PROTOCOL', 'RAW_MISSING']);
export const needsForce = (m: { state: string; reason_class: ReasonClass | null }) => m.state === 'DEAD' && m.reason_class !== null && REPLAY_NEEDS_FORCE.has(m.reason_class);
export const neverApplied = (m: { state: string; reason_class: ReasonClass | null }) => m.state === 'DEAD' && m.reason_class === 'RAW_MISSING';
