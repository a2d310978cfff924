// Crash points for the crash-recovery tests (msgx.test.crash-at = '<point>[:<n>]'): the process
// kills itself with SIGKILL — a real kill -9, nothing cleaned up — the n-th time (default: the
// first) it reaches that point. Empty (the default, and always in production): no effect.
export type CrashPoint = 'pump.after-business-commit' | 'pump.mid-redis' | 'pump.before-terminal' | 'dispatch.after-send';

export type Crash = (point: CrashPoint) => void;

export const noCrash: Crash = () => {};

export function crashAt(spec: string): Crash {
  if (!spec) return noCrash;
  const [point, n] = spec.split(':');
  let left = n ? Number(n) : 1;
  return (p) => {
    if (p !== point || --left > 0) return;
    process.kill(process.pid, 'SIGKILL');
  };
}
