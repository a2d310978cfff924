// Secrets given as files (NAME_FILE, the Docker / Kubernetes convention), and every secret value of
// a loaded configuration registered so that no log line or output shows it (lib/core/secrets.ts).
import { readFileSync } from 'node:fs';
import { splitPgHosts } from '../pg-url.ts';
import { registerSecret } from '../secrets.ts';
import { type Config, FILE_SECRETS } from './keys.ts';

/** The environment with each NAME_FILE read into NAME (problems: unreadable file, both given). */
export function withSecretFiles(env: Record<string, string | undefined>, problems: string[]): Record<string, string | undefined> {
  const out = { ...env };
  for (const name of FILE_SECRETS) {
    const path = env[`${name}_FILE`];
    if (!path) continue;
    if (env[name]) {
      problems.push(`${name} and ${name}_FILE are both set: give one`);
      continue;
    }
    try {
      out[name] = readFileSync(path, 'utf8').replace(/\r?\n$/, '');
    } catch (e) {
      problems.push(`${name}_FILE=${path}: cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
  }
  return out;
}

/** Every secret value of the configuration, so that no log line or output shows it (lib/core/secrets.ts). */
export function registerSecrets(c: Config): void {
  for (const name of ['MSGX_API_TOKEN', 'DATABASE_PASSWORD', 'INBOX_PASSWORD', 'REDIS_PASSWORD', 'REDIS_SENTINEL_PASSWORD', 'KAFKA_SASL_PASSWORD'] as const) registerSecret(c[name]);
  for (const name of ['DATABASE_URL', 'INBOX_URL', 'REDIS_URL'] as const) {
    try {
      const u = new URL(name === 'DATABASE_URL' ? splitPgHosts(c[name]).url : c[name]);
      registerSecret(decodeURIComponent(u.password));
      for (const [k, v] of u.searchParams) if (/^(ssl)?(password|passwd|pass|pwd)$/i.test(k)) registerSecret(v);
    } catch {
      // validated as a URL already
    }
  }
}
