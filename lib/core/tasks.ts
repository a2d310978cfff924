// The graphile-worker task (and job_key) of each dispatcher, declared once: the workers run them,
// the flight handlers, operator actions and the history purge wake them. In lib/core/ because the
// flight domain, a layer below the dispatchers, names them in what it wakes.
export const DISPATCH_TASK = { msg: 'msg-dispatch', schd: 'schd-dispatch', state: 'state-dispatch' } as const;

/** The retention process's task (lib/lifecycle/) and msg-dispatch's outbox retention (lib/dispatch/retention.ts): two tasks, two names. */
export const RETENTION_TASK = 'retention';
export const DISPATCH_RETENTION_TASK = 'dispatch-retention';

/** Every other graphile-worker task, by what it does (the duty loops use the name as job_key too). */
export const TASK = {
  intake: 'intake',
  pump: 'pump',
  backfill: 'backfill',
  replay: 'replay',
  backfillResume: 'backfill-resume',
  request: 'request',
  dispatchReplay: 'dispatch-replay',
  dispatchSkip: 'dispatch-skip',
} as const;

/** The processes of the Procfile, by name (ports `msgx.http.port.<name>`, metrics' `process` label). */
export const PROCESS_NAMES = ['intake', 'pump', 'backfill', 'msg-dispatch', 'schd-dispatch', 'state-dispatch', 'retention', 'api'] as const;
export type ProcessName = (typeof PROCESS_NAMES)[number];
