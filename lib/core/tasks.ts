// The graphile-worker task (and job_key) of each dispatcher, declared once: the workers run them,
// the flight handlers, operator actions and the history purge wake them. In lib/core/ because the
// flight domain, a layer below the dispatchers, names them in what it wakes.
export const DISPATCH_TASK = { msg: 'msg-dispatch', schd: 'schd-dispatch' } as const;
