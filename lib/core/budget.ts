// The time budget of one run of a duty (the pump's drain, an intake round loop, a backfill or
// dispatch drain, a retention job): a run works until its budget is spent, then hands over to
// the next run (lib/runtime/duty.ts re-schedules it). Defined once here.
// Budgets measure elapsed wall time on the system clock (lib/core/clock.ts), never the business
// clock a duty is given (a test's frozen clock must not make a drain run forever).
import { systemClock } from './clock.ts';

const wallMs = () => systemClock.now().getTime();

export class TimeBudget {
  readonly ms: number;
  private readonly until: number;
  private cutShort = false;

  constructor(ms: number) {
    this.ms = ms;
    this.until = wallMs() + ms;
  }

  /** True (and remembered in `cut`) once the budget is spent. */
  spent(): boolean {
    if (!this.cutShort && wallMs() >= this.until) this.cutShort = true;
    return this.cutShort;
  }

  /** Whether the run stopped because the budget was spent (work may remain). */
  get cut(): boolean {
    return this.cutShort;
  }

  /** Milliseconds left (0 when spent). */
  leftMs(): number {
    return Math.max(0, this.until - wallMs());
  }
}
