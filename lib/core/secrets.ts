// Secrets out of every text the gateway writes (docs/operations.md "Production settings"): the
// configuration registers each secret value it loads (passwords, the SASL password, the API
// token, a password inside a URL); scrub() replaces them, a password in any URL and any PEM
// private key block with ***. The log lines of every process (lib/runtime/log.ts), /healthz
// reasons (lib/runtime/health.ts) and the CLIs' output (scripts/args.ts) pass through it.

const known = new Set<string>();

/** Shorter values would scrub ordinary words; a secret that short is refused by no one, but is not searched for. */
const MIN_LENGTH = 4;

/** Remember a secret value: scrub() replaces it wherever it appears. */
export function registerSecret(value: string | undefined | null): void {
  if (!value || value.length < MIN_LENGTH) return;
  known.add(value);
  // as it appears inside a URL or JSON-escaped
  const encoded = encodeURIComponent(value);
  if (encoded !== value) known.add(encoded);
  const json = JSON.stringify(value).slice(1, -1);
  if (json !== value) known.add(json);
}

/**
 * Credentials in a URL for logs: `//user:pw@` → `//user:***@` (also an empty user name: `//:pw@`),
 * and a password given as a query parameter (`?password=`, `&sslpassword=`, `pass`, `pwd`) → `=***`.
 */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^:@/\s"']*):([^/\s"'@]*)@/g, '//$1:***@').replace(PASSWORD_PARAM, '$1***');
}
const PASSWORD_PARAM = /([?&;](?:ssl)?(?:password|passwd|pass|pwd)=)[^&;#\s"']*/gi;

const PEM_KEY = /-----BEGIN ([A-Z ]*)PRIVATE KEY-----[\s\S]*?-----END \1PRIVATE KEY-----/g;

/** The text with every registered secret, every URL password and every PEM private key replaced by ***. */
export function scrub(text: string): string {
  let out = redactUrl(text);
  if (out.includes('PRIVATE KEY-----')) out = out.replace(PEM_KEY, '***');
  for (const s of known) if (out.includes(s)) out = out.split(s).join('***');
  return out;
}

/** For tests: whether a value is registered. */
export function isRegisteredSecret(value: string): boolean {
  return known.has(value);
}
