// kafkajs, as every process of msgexchange uses it: the package, with one fix to kafkajs 2.2.4
// (the last release; the project is not maintained) applied once on import
// (docs/decisions.md "Footprint"). Import kafkajs from here, never from 'kafkajs', where a
// client lives longer than a command.
//
// The fix: kafkajs 2.2.4's RequestQueue re-arms a timer after every check of its pending
// requests, also when none is pending and the connection is not throttled; the delay is then
// negative, Node runs it after 1 ms, and each open broker connection wakes its process about
// 1,000 times a second for nothing (https://github.com/tulios/kafkajs/issues/1556, open). Idle,
// a dispatcher burned 4 % of a core. Here the check is armed only when a request is pending (at the
// throttle's end, or in 10 ms without one, as kafkajs does) or a throttle is in force; nothing else is
// needed, because kafkajs checks again on every new request it cannot send at once and on every
// response.
import { createRequire } from 'node:module';
import kafkajs from 'kafkajs';
import { systemClock } from '../core/clock.ts';

/** The kafkajs release the fix is written for; any other leaves kafkajs as it is (a unit test says so). */
export const PATCHED_KAFKAJS = '2.2.4';
const RETRY_PENDING_MS = 10;

interface Queue {
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  pending: unknown[];
  checkPendingRequests(): void;
}

const require = createRequire(import.meta.url);
export const kafkajsVersion = (require('kafkajs/package.json') as { version: string }).version;
const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as { prototype: Queue & { scheduleCheckPendingRequests(): void } };

/** Has the fix been applied to this process's kafkajs? */
export const idleLoopFixed = kafkajsVersion === PATCHED_KAFKAJS;

if (idleLoopFixed) {
  RequestQueue.prototype.scheduleCheckPendingRequests = function (this: Queue) {
    if (this.throttleCheckTimeoutId) return;
    const throttledFor = this.throttledUntil - systemClock.now().getTime(); // kafkajs sets throttledUntil on the system time
    const delay = this.pending.length > 0 && throttledFor <= 0 ? RETRY_PENDING_MS : throttledFor;
    // nothing pending and no throttle: no check to run (kafkajs 2.2.4 ran one every 1 ms)
    if (delay <= 0) return;
    this.throttleCheckTimeoutId = setTimeout(() => {
      this.throttleCheckTimeoutId = null;
      this.checkPendingRequests();
    }, delay);
  };
}

export default kafkajs;
