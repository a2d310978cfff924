// A Postgres URL naming several hosts, as libpq takes it (docs/operations.md "Production
// topology"): postgres://user@h1:5432,h2:5433/db?target_session_attrs=read-write. The gateway
// writes, so a host list always means "the host that is not in recovery" (the primary):
// lib/db/pg-hosts.ts chooses it. Pure parsing; the rest of the URL is an ordinary one-host URL.

export interface PgHost {
  host: string;
  port: number;
}

export interface PgHostList {
  /** Every host of the URL, in its order (one for an ordinary URL). */
  hosts: PgHost[];
  /** The URL with the first host in place of the list and target_session_attrs removed. */
  url: string;
  problems: string[];
}

const DEFAULT_PORT = 5432;
/** libpq's values the gateway can honour: it needs a host that accepts writes. */
const WRITABLE = new Set(['read-write', 'primary']);

function oneHost(text: string): PgHost | null {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(text);
  if (!m) return null;
  const port = m[2] === undefined ? DEFAULT_PORT : Number(m[2]);
  return port >= 1 && port <= 65535 ? { host: m[1].replace(/^\[|\]$/g, ''), port } : null;
}

/** Splits the host list off a Postgres URL (name: the setting, for the problems). */
export function splitPgHosts(url: string, name = 'DATABASE_URL'): PgHostList {
  const m = /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^/?#]*)(.*)$/s.exec(url);
  if (!m) return { hosts: [], url, problems: [] };
  const [, scheme, auth = '', list, rest] = m;
  const parts = list.split(',');
  const hosts = parts.map(oneHost);
  const problems: string[] = [];
  if (hosts.some((h) => h === null)) problems.push(`${name}: cannot read its host list (host:port, comma separated)`);
  const ok = hosts.filter((h): h is PgHost => h !== null);
  let tail = rest;
  const q = rest.indexOf('?');
  if (q >= 0) {
    const params = new URLSearchParams(rest.slice(q + 1));
    const attrs = params.get('target_session_attrs');
    if (attrs !== null && !WRITABLE.has(attrs) && !(attrs === 'any' && ok.length === 1)) {
      problems.push(`${name}: target_session_attrs=${attrs}, but the gateway writes: read-write (or primary)`);
    }
    params.delete('target_session_attrs');
    const p = params.toString();
    tail = rest.slice(0, q) + (p ? `?${p}` : '');
  }
  if (parts.length === 1) return { hosts: ok, url: q >= 0 ? `${scheme}${auth}${list}${tail}` : url, problems };
  const first = ok[0];
  const firstText = first ? `${first.host.includes(':') ? `[${first.host}]` : first.host}:${first.port}` : list;
  return { hosts: ok, url: `${scheme}${auth}${firstText}${tail}`, problems };
}
