// What a duty's start opens — connection pools, clients, the decode worker, watches and their
// timers — each with how to close it. The process closes it all when the duty stops, and also
// when the start fails halfway: a start retried after a refusal (Postgres restarting or full, a
// statement cancelled) leaves nothing of the failed attempt behind (docs/decisions.md "A failed
// start closes what it opened").
import { withDeadline } from './leader.ts';

export class Opened {
  private readonly closers: (() => unknown)[] = [];

  /** `x`, closed by `close(x)` when the duty stops or its start fails. Returns `x`. */
  add<T>(x: T, close: (x: T) => unknown): T {
    this.closers.push(() => close(x));
    return x;
  }

  /** How many are open (tests). */
  get size(): number {
    return this.closers.length;
  }

  /**
   * Closes everything added, last first: each closer starts in that order (a watch stops before
   * the pool it reads is ended), what they wait for (a pool's end, a producer's disconnect) runs
   * side by side, bounded by `ms` in all. Never rejects: a closer that fails or is still waiting
   * at the bound goes to `failed`. Everything is forgotten, so a second call closes nothing again.
   */
  async close(ms: number, failed: (e: unknown) => void): Promise<void> {
    const closers = this.closers.splice(0).reverse();
    const waits = closers.map((close) => {
      try {
        return Promise.resolve(close()).catch(failed);
      } catch (e) {
        failed(e);
        return Promise.resolve();
      }
    });
    await withDeadline(Promise.all(waits), ms, 'closing what the duty opened').catch(failed);
  }
}
