// The tail: a batch whose business step committed, its mirror step (Redis) and then its terminal
// statement (on the second connection) running while the next batch is chosen, read and applied.
// Its ordering rules are the methods of TailGate, each tested on its own
// (test/unit/pipeline/tail-gate.test.ts):
//   R1 commitGate   the next batch's business transaction commits only after this mirror step
//                   succeeded; when it failed, that transaction rolls back (MirrorBehind), so a
//                   Redis failure stops the pump where it stopped before.
//   R2 settle       the next batch's mirror step starts only after this terminal statement ended:
//                   Redis is written in batch order, and INV-10 holds per batch (the terminal
//                   statement starts only after its own mirror step succeeded: start).
//   R3 excluded     the batch whose tail runs is left out of the next heads read.
//   R4 start        at most one tail runs; drain settles it before releasing PIPELINE_LOCK or
//                   returning (settle, ended).
//   R5 overlapsNext a batch's tail overlaps the next batch only in drain, when nothing cut the
//                   batch short and it is not a large message (whose release follows its steps).
// A crash anywhere leaves committed, non-terminal outcomes: recovered by the next pump.
import { describe } from '../../core/errors.ts';
import type { Done } from './deps.ts';

export type TailPhase = 'none' | 'mirroring' | 'terminal' | 'ended' | 'mirror-failed' | 'terminal-failed';

/** R5: may this batch's mirror and terminal steps run while the next batch does? */
export const overlapsNext = (o: { drain: boolean; cut: boolean; large: boolean }): boolean => o.drain && !o.cut && !o.large;

/** The next batch's business transaction rolls back: the mirror step of the batch before failed. */
export class MirrorBehind extends Error {}

type Outcome = { done: Done[] } | { mirrorError: unknown } | { terminalError: unknown };

interface Running<M> {
  applied: M[];
  ids: ReadonlySet<number>;
  /** The mirror step: null when it succeeded, or its error (never rejects). */
  mirrored: Promise<unknown>;
  /** The whole tail (never rejects). */
  outcome: Promise<Outcome>;
}

export class TailGate<M extends { h: { msg_id: number } }> {
  private running: Running<M> | null = null;
  private current: TailPhase = 'none';

  /** Where the running tail is ('none': no tail runs). */
  get phase(): TailPhase {
    return this.running ? this.current : 'none';
  }

  /** R4, R2: start a tail for `applied` whose mirror step is under way; `terminal` runs once it succeeded. */
  start(applied: M[], mirror: Promise<void>, terminal: () => Promise<Done[]>): void {
    if (this.running) throw new Error('a tail is running already: settle it first');
    this.current = 'mirroring';
    const mirrored = mirror.then(
      () => null,
      (e: unknown) => e ?? new Error('mirror step failed'),
    );
    const outcome = mirror.then(
      async (): Promise<Outcome> => {
        this.current = 'terminal';
        try {
          const done = await terminal();
          this.current = 'ended';
          return { done };
        } catch (terminalError) {
          this.current = 'terminal-failed';
          return { terminalError };
        }
      },
      (mirrorError: unknown): Outcome => {
        this.current = 'mirror-failed';
        return { mirrorError };
      },
    );
    this.running = { applied, ids: new Set(applied.map((m) => m.h.msg_id)), mirrored, outcome };
  }

  /** R3: the messages of the running tail (not open for the next batch). */
  excluded(): ReadonlySet<number> {
    return this.running?.ids ?? new Set();
  }

  /** R1: what the next business transaction runs last before it commits (undefined: no tail runs). */
  commitGate(): (() => Promise<void>) | undefined {
    const running = this.running;
    if (!running) return undefined;
    return async () => {
      const e = await running.mirrored;
      if (e !== null) throw new MirrorBehind(describe(e));
    };
  }

  /**
   * R2, R4: wait for the tail to end. Its outcomes; or, when its mirror step failed, what
   * `mirrorFailed` records on its first message (the head waits); a terminal failure is thrown.
   */
  async settle(mirrorFailed: (first: M, err: unknown) => Promise<Done>): Promise<Done[]> {
    const running = this.running;
    if (!running) return [];
    this.running = null;
    const r = await running.outcome;
    if ('mirrorError' in r) return [await mirrorFailed(running.applied[0], r.mirrorError)];
    if ('terminalError' in r) throw r.terminalError;
    return r.done;
  }

  /** R4: whatever still runs has ended (never rejects; nothing recorded): drain's last word before it releases PIPELINE_LOCK. */
  async ended(): Promise<void> {
    await this.running?.outcome;
  }
}
