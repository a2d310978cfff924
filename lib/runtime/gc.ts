// Garbage collected after a message that is a batch of its own (a snapshot; docs/decisions.md
// "Snapshots in bounded memory"). The live data of a 9,999-flight snapshot is ~45 MB at any step,
// but V8 collects the old generation lazily: left to itself, the garbage of decoding, planning,
// writing and mirroring one snapshot stays, and the next snapshot's work comes on top of it.
// collectGarbage (one full collection, ~50 ms after a 9,999-flight snapshot on the slowest machine)
// frees it for the next message at once; releaseMemory (V8's collection of all available garbage,
// which also returns the freed heap to the operating system: ~150 ms) is left to the process's
// next idle minute (releaseWhileIdle). An ordinary batch calls neither.
//
// V8 hands out its `gc` function only when the flag --expose-gc is set; it is set here once, on
// first use, and the function taken from a new context (where the flag then installs it), so no
// command line that starts a pump (Procfile, tests, benches) needs the flag. A process started
// with --expose-gc uses its own. The 'last-resort' flavour is V8's collection of all available
// garbage, the one that also shrinks the heap.
import { performance } from 'node:perf_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';

type Gc = (options?: { type: 'major'; execution: 'sync'; flavor?: 'last-resort' }) => void;
let gc: Gc | undefined;

function gcFunction(): Gc {
  if (!gc) {
    const own = (globalThis as { gc?: Gc }).gc;
    if (own) gc = own;
    else {
      v8.setFlagsFromString('--expose-gc');
      gc = vm.runInNewContext('gc') as Gc;
    }
  }
  return gc;
}

/** Collect all garbage of this thread's heap now, synchronously, and give the freed memory back. */
export function releaseMemory(): void {
  gcFunction()({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

/** One full collection of this thread's heap now, synchronously: the garbage is freed for reuse (not given back). */
export function collectGarbage(): void {
  gcFunction()({ type: 'major', execution: 'sync' });
}

/**
 * At rest, memory given back every `everyMs`: a process that only polls makes a little garbage,
 * and V8 let its heap grow by 6–7 MB in a few minutes without collecting it (RSS at rest crept
 * past 100 MB; docs/decisions.md "Footprint"). A tick whose period kept the event loop busy more
 * than `busyAbove` of the time (work under way) is skipped: a full collection then would pause it.
 */
export function releaseWhileIdle(everyMs: number, busyAbove = 0.05, release: () => void = releaseMemory): () => void {
  let last = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    if (busy <= busyAbove) release();
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
