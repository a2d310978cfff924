// A DATABASE_URL naming several hosts (lib/core/pg-url.ts), as libpq's target_session_attrs=
// read-write does it (node-postgres does not): every connection goes to the host that is not in
// recovery. The host is chosen by asking all of them at once (`select pg_is_in_recovery()`; the
// first primary to answer wins), kept, and chosen again when a connection to it fails, breaks,
// or finds it in recovery (a demoted primary). One choice per host list, shared by every pool and
// dedicated client of the process (graphile-worker's pool is the process's pool).
import pg from 'pg';
import type { PgTarget } from '../core/connections.ts';
import type { PgHost } from '../core/pg-url.ts';
import { withTimeout } from '../core/timeout.ts';

const IN_RECOVERY = 'select pg_is_in_recovery() as in_recovery';

type Settable = { host: string; port: number };
const label = (h: PgHost) => `${h.host}:${h.port}`;

/** Ask one host whether it is a primary; rejects with the reason it is not usable. */
async function isPrimary(settings: pg.ClientConfig, h: PgHost, ms: number): Promise<PgHost> {
  const c = new pg.Client(settings);
  Object.assign(c as unknown as Settable, { host: h.host, port: h.port });
  c.on('error', () => {});
  try {
    await withTimeout(ms, `connect to ${label(h)}`, c.connect());
    const r = await withTimeout(ms, `pg_is_in_recovery on ${label(h)}`, c.query<{ in_recovery: boolean }>(IN_RECOVERY));
    if (r.rows[0]?.in_recovery) throw new Error(`${label(h)} is in recovery (a standby)`);
    return h;
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new Error(err.message.startsWith(label(h)) ? err.message : `${label(h)}: ${err.code ?? err.message}`);
  } finally {
    void c.end().catch(() => {});
  }
}

export class PrimaryChooser {
  private current: PgHost | null = null;
  private choosing: Promise<PgHost> | null = null;
  /** Times a host was chosen (tests, the log). */
  chosen = 0;

  readonly hosts: readonly PgHost[];
  private readonly settings: pg.ClientConfig;
  private readonly timeoutMs: number;

  constructor(hosts: readonly PgHost[], settings: pg.ClientConfig, timeoutMs: number) {
    this.hosts = hosts;
    this.settings = settings;
    this.timeoutMs = timeoutMs;
  }

  /** The primary: the kept one, else every host asked at once (one question in flight at a time). */
  primary(): Promise<PgHost> {
    if (this.current) return Promise.resolve(this.current);
    this.choosing ??= this.choose().finally(() => {
      this.choosing = null;
    });
    return this.choosing;
  }

  /** The host failed (refused, broke, in recovery): the next connection chooses again. */
  forget(h: PgHost): void {
    if (this.current === h) this.current = null;
  }

  private async choose(): Promise<PgHost> {
    try {
      const h = await Promise.any(this.hosts.map((x) => isPrimary(this.settings, x, this.timeoutMs)));
      this.current = h;
      this.chosen++;
      return h;
    } catch (e) {
      const reasons = e instanceof AggregateError ? e.errors.map((x: Error) => x.message) : [(e as Error).message];
      throw Object.assign(new Error(`no host of the Postgres URL accepts writes (${reasons.join('; ')})`), { code: 'ECONNREFUSED' });
    }
  }
}

const choosers = new Map<string, PrimaryChooser>();

/** The chooser of a host list (one per list in the process). */
export function chooserOf(hosts: readonly PgHost[], settings: pg.ClientConfig): PrimaryChooser {
  const key = hosts.map(label).join(',');
  let c = choosers.get(key);
  if (!c) {
    c = new PrimaryChooser(hosts, settings, settings.connectionTimeoutMillis || 10_000);
    choosers.set(key, c);
  }
  return c;
}

/**
 * The client class of a target: pg.Client for one host; for a host list, a client that connects
 * to the chosen primary and checks it is one. The pool factory and connectClient use it.
 */
export function clientClassOf(target: PgTarget, settings: pg.ClientConfig): typeof pg.Client {
  if (!target.hosts || target.hosts.length < 2) return pg.Client;
  const chooser = chooserOf(target.hosts, settings);
  const ms = settings.connectionTimeoutMillis || 10_000;
  class PrimaryClient extends pg.Client {
    override connect(): Promise<pg.Client>;
    override connect(callback: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): void;
    override connect(callback?: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): Promise<pg.Client> | undefined {
      const done = this.connectPrimary().then(() => this as pg.Client);
      if (!callback) return done;
      done.then(
        (c) => (callback as (err: null, c: pg.Client) => void)(null, c),
        (e: Error) => (callback as (err: Error) => void)(e),
      );
      return undefined;
    }

    private async connectPrimary(): Promise<void> {
      const h = await chooser.primary();
      this.host = h.host;
      (this as unknown as Settable).port = h.port;
      try {
        await super.connect();
      } catch (e) {
        chooser.forget(h);
        throw e;
      }
      this.on('error', () => chooser.forget(h));
      const r = await withTimeout(ms, `pg_is_in_recovery on ${label(h)}`, this.query<{ in_recovery: boolean }>(IN_RECOVERY)).catch((e: Error) => {
        chooser.forget(h);
        void this.end().catch(() => {});
        throw e;
      });
      if (r.rows[0]?.in_recovery) {
        chooser.forget(h);
        await this.end().catch(() => {});
        throw Object.assign(new Error(`${label(h)} is in recovery now (a standby): the next connection chooses the host again`), { code: 'ECONNRESET' });
      }
    }
  }
  return PrimaryClient;
}

/** A new (unconnected) client of a target: to the chosen primary when the URL names several hosts. */
export function newClient(target: PgTarget, settings: pg.ClientConfig): pg.Client {
  return new (clientClassOf(target, settings))(settings);
}
