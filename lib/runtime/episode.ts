// Something that goes wrong, lasts and ends — a dependency away, Kafka unreachable for a
// dispatcher, Postgres found behind: one line when it begins, at most one reminder a period while
// it lasts, one line when it ends with how long it lasted. The words of the lines are the
// caller's; when each is due is decided here, on the injected clock.
import type { Clock } from '../core/clock.ts';

export class Episode {
  private began: number | null = null;
  private remindedAt = 0;
  private readonly clock: Clock;
  private readonly everyMs: number;

  constructor(clock: Clock, everyMs: number) {
    this.clock = clock;
    this.everyMs = everyMs;
  }

  get on(): boolean {
    return this.began !== null;
  }

  /** It begins now: true, or false when it had begun already. */
  begin(): boolean {
    if (this.began !== null) return false;
    this.began = this.remindedAt = this.now();
    return true;
  }

  /** While it lasts: true at most once a period (a reminder is due). */
  remind(): boolean {
    const now = this.now();
    if (this.began === null || now - this.remindedAt < this.everyMs) return false;
    this.remindedAt = now;
    return true;
  }

  /** Milliseconds since it began (0 while it is not on). */
  lasted(): number {
    return this.began === null ? 0 : this.now() - this.began;
  }

  /** It ends now: how long it lasted (ms), or null when it was not on. */
  end(): number | null {
    if (this.began === null) return null;
    const ms = this.lasted();
    this.began = null;
    return ms;
  }

  private now(): number {
    return this.clock.now().getTime();
  }
}
