// Once per test run, for every worker slot of the run (test/support/slots.ts): a fresh Postgres database
// (all migrations, graphile-worker's included; slot 1 migrated, the others copied from it) and
// the MariaDB schema of sql/mysql/aodbinterface.sql. MariaDB tables and the slot's Redis db are
// reset by the files that use them.
import { readFileSync } from 'node:fs';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { migrate } from '../../lib/db/migrate.ts';
import { slotCount, slotOffset, slotUrls } from './slots.ts';

const MY_SCHEMA = new URL('../../sql/mysql/aodbinterface.sql', import.meta.url);
const dbName = (url: string) => decodeURIComponent(new URL(url).pathname.slice(1));

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000, query_timeout: 120_000 });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

async function freshPostgres(first: string, others: string[]): Promise<void> {
  const admin = first.replace(/\/[^/]+$/, '/postgres');
  await withClient(admin, async (c) => {
    const exists = await c.query('select 1 from pg_database where datname = $1', [dbName(first)]);
    if (exists.rowCount === 0) await c.query(`create database "${dbName(first)}"`);
  });
  await withClient(first, (c) => c.query('drop schema if exists public cascade; drop schema if exists graphile_worker cascade; create schema public;'));
  await migrate(first);
  // a copy of the migrated database is much quicker than migrating again
  await withClient(admin, async (c) => {
    for (const url of others) {
      await c.query(`drop database if exists "${dbName(url)}" with (force)`);
      await c.query(`create database "${dbName(url)}" template "${dbName(first)}"`);
    }
  });
}

/** The inbox/outbox schema, applied as scripts/services applies it (every statement IF NOT EXISTS). */
async function mariadbSchema(url: string): Promise<void> {
  const u = new URL(url);
  const sql = readFileSync(MY_SCHEMA, 'utf8').replaceAll('`aodbinterface`', `\`${dbName(url)}\``);
  const c = await mysql.createConnection({
    host: u.hostname,
    port: Number(u.port || 3306),
    user: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password),
    multipleStatements: true,
    connectTimeout: 10_000,
  });
  try {
    await c.query({ sql, timeout: 60_000 });
  } finally {
    await c.end();
  }
}

export default async function setup() {
  const slots = Array.from({ length: slotCount() }, (_, i) => slotUrls(slotOffset() + i + 1));
  await freshPostgres(
    slots[0].pg,
    slots.slice(1).map((s) => s.pg),
  );
  for (const s of slots) await mariadbSchema(s.inbox);
}
