// The console's one reader of the browser's clock (scripts/check-clock.ts): token expiry and the
// like ask it, never Date.now() themselves.

/** Milliseconds since the epoch, as the browser's clock has it. */
export const nowMs = () => Date.now();
