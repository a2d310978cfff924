// Configuration: every key (lib/core/config/keys.ts: schema, default, what it does) read from the
// environment once, validated, typed; handed out by concern (config/slices.ts) and as connection
// targets (config/targets.ts). Nothing else reads process.env. `npm run config` prints every key.
import * as v from 'valibot';
import { redactUrl } from './secrets.ts';
import { type Config, CONNECTIONS, envName, FILE_SECRETS, PARAMS } from './config/keys.ts';
import { registerSecrets, withSecretFiles } from './config/secret-files.ts';
import { plaintextProblems, resolveAll } from './config/targets.ts';
import { ConfigError, LOOPBACK } from './config/values.ts';

export { redactUrl };
export { type Config, envName, FILE_SECRETS } from './config/keys.ts';
export { type AirportConfig, type Slices, sliceKeys, slices } from './config/slices.ts';
export { kafkaSecuritySettings, peerDatabase, type Targets, targets } from './config/targets.ts';
export { ConfigError, parseDuration, PLAINTEXT_SERVICES } from './config/values.ts';

/** Parse and validate once. Throws ConfigError naming every bad key and why. */
export function loadConfig(given: Record<string, string | undefined> = process.env): Config {
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  const env = withSecretFiles(given, problems);
  const take = (key: string, name: string, schema: v.GenericSchema<string, unknown>, dflt: string) => {
    const raw = env[name] ?? dflt;
    const r = v.safeParse(schema, raw);
    if (r.success) out[key] = r.output;
    else problems.push(`${key} (${name}=${JSON.stringify(secret(name, raw))}): ${r.issues.map((i) => i.message).join('; ')}`);
  };
  for (const [key, [schema, dflt]] of Object.entries(PARAMS) as [string, readonly [v.GenericSchema<string, unknown>, string, string]][]) take(key, envName(key), schema, dflt);
  for (const [key, [schema, dflt]] of Object.entries(CONNECTIONS) as [string, readonly [v.GenericSchema<string, unknown>, string, string]][]) take(key, key, schema, dflt);
  if (problems.length === 0) problems.push(...selfCheck(out as Config));
  if (problems.length) throw new ConfigError(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
  const config = Object.freeze(out) as Config;
  registerSecrets(config);
  return config;
}

/** Start-up self-checks: settings that contradict each other stop the process with the key named. */
function selfCheck(c: Config): string[] {
  const p: string[] = [];
  const max = c['msgx.pipeline.max-attempts'];
  const ladder = c['msgx.pipeline.backoff'];
  if (ladder.length !== max - 1) p.push(`msgx.pipeline.backoff has ${ladder.length} entries but msgx.pipeline.max-attempts=${max} needs exactly ${max - 1}`);
  if (c['msgx.pipeline.overdue-backfill'] > c['msgx.pipeline.inbox-retention']) p.push('msgx.pipeline.overdue-backfill (R) must not exceed msgx.pipeline.inbox-retention (R_keep)');
  // TLS / SASL settings against their URLs, files readable and what they should be
  const all = resolveAll(c);
  p.push(...all.problems);
  const dev = c['msgx.dev-mode'];
  if (dev && !LOOPBACK.has(c['msgx.http.host'])) p.push(`development mode (MSGX_DEV_MODE=true) only on a loopback address, not msgx.http.host=${c['msgx.http.host']}`);
  if (!dev && c.MSGX_API_TOKEN)
    p.push(
      'MSGX_API_TOKEN (the shared token) works only in development mode on loopback: give each system an API key (MSGX_API_KEYS_FILE) and people sign-in (MSGX_OIDC_ISSUER); docs/operations.md "Access and roles"',
    );
  if (c['msgx.oidc.issuer'] && !c['msgx.oidc.audience']) p.push('msgx.oidc.issuer is set: msgx.oidc.audience names this gateway in the tokens (their aud claim)');
  if (!dev) p.push(...plaintextProblems(all.targets, new Set(c['msgx.allow-plaintext'])));
  return p;
}

/** Every configuration key: its environment name, default and what it does (`npm run config`, --help). */
export function describeConfig(): { key: string; env: string; default: string; what: string }[] {
  return [
    ...Object.entries(PARAMS).map(([key, [, d, what]]) => ({ key, env: envName(key), default: d, what })),
    ...Object.entries(CONNECTIONS).map(([key, [, d, what]]) => ({ key, env: key, default: d, what })),
    ...FILE_SECRETS.map((name) => ({ key: `${name}_FILE`, env: `${name}_FILE`, default: '', what: `${name} read from this file` })),
  ];
}

/** A raw setting as an error message may show it: URLs redacted, the API token and passwords never. */
const secret = (name: string, raw: string) => (name === 'MSGX_API_TOKEN' || /_PASSWORD$/.test(name) ? '***' : /_URL$/.test(name) ? redactUrl(raw) : raw);
