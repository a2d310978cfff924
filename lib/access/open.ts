// The access of one process, built once at start from its configuration (docs/operations.md
// "Access and roles"): its identity sources (API keys, the identity provider, in development mode
// the shared token), the gate of its HTTP server and its audit trail. A setting that cannot be
// used is a ConfigError naming it (the process exits 2), as every other setting.
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { ConfigError, type Slices } from '../core/config.ts';
import type { Executor } from '../db/statement.ts';
import { Gate } from './gate.ts';
import { Identity } from './identity.ts';
import { KeysFileError, KeyStore } from './keys.ts';
import type { OidcSettings } from './oidc.ts';
import { parseRoleMap } from './roles.ts';
import { parseAnonymousReads } from './routes.ts';
import { AuditTrail } from './trail.ts';

export interface Access {
  gate: Gate;
  identity: Identity;
  trail: AuditTrail;
  keys: KeyStore | undefined;
  oidc: OidcSettings | undefined;
  /** The console's sign-in settings (GET /ops/config). */
  console: { clientId: string; scopes: string; resource: string; tokenSignIn: boolean };
  close(): Promise<void>;
}

export interface AccessDeps {
  process: string;
  http: Slices['http'];
  oidc: Slices['oidc'];
  clock: Clock;
  log: Logger;
  db?: Executor;
  /** Counters of the process (lib/runtime/metrics.ts): refusals by status, reload and write failures. */
  count: { refusal(status: number): void; keysRefused(): void; auditWriteFailed(): void };
}

const bad = (problems: string[]) => new ConfigError(`invalid configuration:\n  - ${problems.join('\n  - ')}`);

/** Throws ConfigError when a setting of access cannot be used. */
export function openAccess(d: AccessDeps): Access {
  const problems: string[] = [];
  const reads = parseAnonymousReads(d.http.anonymousReads);
  problems.push(...reads.problems.map((p) => `msgx.http.anonymous-reads: ${p}`));
  const roles = parseRoleMap(d.oidc.roleMap);
  problems.push(...roles.problems.map((p) => `msgx.oidc.role-map: ${p}`));
  let keys: KeyStore | undefined;
  try {
    keys = d.http.apiKeysFile ? new KeyStore(d.http.apiKeysFile) : undefined;
  } catch (e) {
    if (!(e instanceof KeysFileError)) throw e;
    problems.push(e.message);
  }
  if (problems.length) throw bad(problems);
  const o = d.oidc;
  const oidc: OidcSettings | undefined = o.issuer
    ? { issuer: o.issuer, audience: o.audience, roleClaim: o.roleClaim, roleMap: roles.map, clockSkewMs: o.clockSkewMs, timeoutMs: o.timeoutMs }
    : undefined;
  const devToken = d.http.devMode ? d.http.apiToken || 'dev' : undefined;
  const identity = new Identity({ keys, oidc, devToken, clock: d.clock });
  const trail = new AuditTrail({
    process: d.process,
    log: d.log,
    clock: d.clock,
    db: d.db,
    timeoutMs: o.timeoutMs,
    onWriteFailed: (e) => {
      d.count.auditWriteFailed();
      d.log.warn({ err: (e as Error).message }, 'audit: a row could not be written to ACCESS_AUDIT (its log line was)');
    },
  });
  keys?.watch((r) => {
    if ('reloaded' in r) return d.log.info({ file: keys.file, keys: r.reloaded }, 'api keys: file changed, keys reloaded');
    d.count.keysRefused();
    d.log.error({ file: keys.file, problems: r.problems }, 'api keys: the changed file is refused; the keys loaded before stay in force');
  });
  const gate = new Gate({ identity, allowedHosts: d.http.allowedHosts, anonymousReads: reads.open, clock: d.clock, trail, count: d.count.refusal });
  return {
    gate,
    identity,
    trail,
    keys,
    oidc,
    console: { clientId: o.clientId, scopes: o.scopes, resource: o.resource, tokenSignIn: devToken !== undefined },
    close: async () => {
      keys?.stop();
      await trail.close();
    },
  };
}
