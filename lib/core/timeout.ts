// Bound a call in time: settle within ms or reject (the call is abandoned, not cancelled).
// One helper for every outside call (inbox, Kafka): `what` names the call in the default error
// (code ETIMEDOUT), or builds the caller's own error from the limit.

/** The error of a call that `what` names and that did not settle within the limit: "<what> did not answer within <ms> ms". */
export const noAnswer =
  (what: string) =>
  (ms: number): Error =>
    new Error(`${what} did not answer within ${ms} ms`);

export async function withTimeout<T>(ms: number, what: string | ((ms: number) => Error), p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(typeof what === 'string' ? Object.assign(new Error(`${what} timed out after ${ms} ms`), { code: 'ETIMEDOUT' }) : what(ms)), ms);
  });
  try {
    return await Promise.race([p, t]);
  } finally {
    clearTimeout(timer);
    p.catch(() => {}); // a late rejection of the abandoned call is not unhandled
  }
}
