// Real services for integration tests: Postgres (msgx_test), MariaDB (aodbinterface_test), Redis db 15.
import { sql } from 'kysely';
import type pg from 'pg';
import { createPool, connectClient } from '../../lib/db/postgres.ts';
import { createQueryDb, createQuerySessionDb, type QueryDb } from '../../lib/db/kysely.ts';
import { createAodbPool, type Inbox } from '../../lib/db/mysql.ts';
import { insertInboxRow } from '../../lib/pipeline/inbox.ts';
import { createRedis, type Redis } from '../../lib/db/redis.ts';
import { createLogger } from '../../lib/runtime/log.ts';
import { TEST_INBOX_URL, TEST_PG_URL, TEST_REDIS_URL } from './env.ts';

export const silentLog = createLogger('test', process.env.MSGX_LOG_LEVEL ?? 'silent');

export interface TestServices {
  pool: pg.Pool;
  db: QueryDb;
  inbox: Inbox;
  session: QueryDb;
  sessionClient: pg.Client;
  redis: Redis;
  close(): Promise<void>;
}

/** The test services; a second installation passes its own Postgres and Redis (the inbox is shared, as in production). */
export async function openServices(o: { pgUrl?: string; redisUrl?: string } = {}): Promise<TestServices> {
  const pgUrl = o.pgUrl ?? TEST_PG_URL;
  const pool = createPool(pgUrl, { max: 6, name: 'test' });
  const sessionClient = await connectClient(pgUrl, 'test-session');
  const inbox = createAodbPool(TEST_INBOX_URL, { timeoutMs: 5000 });
  const redis = createRedis(o.redisUrl ?? TEST_REDIS_URL, 5000);
  return {
    pool,
    db: createQueryDb(pool),
    inbox,
    session: createQuerySessionDb(sessionClient),
    sessionClient,
    redis,
    async close() {
      await sessionClient.end().catch(() => {});
      await pool.end().catch(() => {});
      await inbox.end().catch(() => {});
      redis.disconnect();
    },
  };
}

/** Empty every table of the domain (flights, ledger, outbox, reference data, requests, …) and Redis db. */
export async function resetDomain(s: Pick<TestServices, 'db' | 'redis'>): Promise<void> {
  const r = await sql<{ t: string }>`select tablename t from pg_tables where schemaname = 'public' and tablename not in ('pgmigrations', 'intake_cursor', 'shadow_intake', 'proc_state')`.execute(s.db);
  if (r.rows.length) await sql.raw(`truncate ${r.rows.map((x) => `"${x.t}"`).join(', ')} cascade`).execute(s.db);
  await s.redis.flushdb();
}

/** Services on empty stores (resetPipeline, then resetDomain): where a file that starts processes begins. */
export async function openEmptyServices(): Promise<TestServices> {
  const s = await openServices();
  await resetPipeline(s);
  await resetDomain(s);
  return s;
}

/** Empty the pipeline tables, the inbox/outbox (IDs restart at 1) and graphile-worker's jobs. */
export async function resetPipeline(s: Pick<TestServices, 'db' | 'inbox'>): Promise<void> {
  await sql`truncate proc_state`.execute(s.db);
  await sql`update intake_cursor set watermark = 0, full_scan_from = null, full_scan_at = null, gap_id = null, gap_seen_at = null, gaps = '[]', passed_gaps = '[]'`.execute(s.db);
  await sql`update shadow_intake set started_after = null, lost = '[]'`.execute(s.db);
  await sql`delete from graphile_worker._private_jobs`.execute(s.db);
  await s.inbox.query('TRUNCATE TABLE cminmsgs');
  await s.inbox.query('TRUNCATE TABLE coutmsgs');
}

let seq = 1000;
/** A well-formed SIS message of any TYPE/STYP with a fresh SEQN (or the one given). */
export function sisMessage(o: { type?: string; styp?: string; seqn?: number; sndr?: string; dttm?: string; body?: string } = {}): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<MSG><META><SNDR>${o.sndr ?? 'AODB'}</SNDR><SEQN>${o.seqn ?? ++seq}</SEQN><DTTM>${o.dttm ?? '20261201083000'}</DTTM><TYPE>${o.type ?? 'TEST'}</TYPE><STYP>${o.styp ?? 'UPD'}</STYP></META>
${o.body ?? '<TEST><VAL>1</VAL></TEST>'}
</MSG>`;
}

export async function putInbox(inbox: Inbox, body: string, opts: { id?: number; processed?: string } = {}): Promise<number> {
  if (opts.id !== undefined || opts.processed) {
    const [r] = await inbox.query<import('mysql2').ResultSetHeader>(
      'INSERT INTO cminmsgs (CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_DATE_PROCESSED, CMINMSGS_STATUS) VALUES (?, ?, NOW(), ?, ?)',
      [opts.id ?? null, body, opts.processed ?? null, 'VALID'],
    );
    return Number(r.insertId);
  }
  return insertInboxRow(inbox, { body, received: '2026-12-01 08:30:00' });
}

export async function procRows(db: QueryDb) {
  return db.selectFrom('proc_state').selectAll().orderBy('msg_id').execute();
}

export async function inboxProcessed(inbox: Inbox): Promise<Map<number, string | null>> {
  const [rows] = await inbox.query<import('mysql2').RowDataPacket[]>('SELECT CMINMSGS_ID id, CMINMSGS_DATE_PROCESSED p FROM cminmsgs ORDER BY CMINMSGS_ID');
  return new Map(rows.map((r) => [Number(r.id), r.p]));
}

/** An inbox pool that points at a port where nothing listens: "MySQL is down". */
export function deadInbox(): Inbox {
  return createAodbPool('mysql://root@127.0.0.1:1/aodbinterface_test', { timeoutMs: 500 });
}

/** A Redis client that points at a port where nothing listens: "Redis is down". */
export function deadRedis(): Redis {
  return createRedis('redis://127.0.0.1:1/0', 300);
}
