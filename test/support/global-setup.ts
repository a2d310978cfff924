// Once per test run: fresh Postgres schema (all migrations, graphile-worker's included).
// MariaDB test tables and Redis db 15 are reset by the files that use them.
import pg from 'pg';
import { migrate } from '../../lib/db/migrate.ts';
import { TEST_PG_URL } from './env.ts';

export default async function setup() {
  const admin = new pg.Client({ connectionString: TEST_PG_URL.replace(/\/[^/]+$/, '/postgres') });
  await admin.connect();
  const db = new URL(TEST_PG_URL).pathname.slice(1);
  const exists = await admin.query('select 1 from pg_database where datname = $1', [db]);
  if (exists.rowCount === 0) await admin.query(`create database "${db}"`);
  await admin.end();
  const c = new pg.Client({ connectionString: TEST_PG_URL });
  await c.connect();
  await c.query('drop schema if exists public cascade; drop schema if exists graphile_worker cascade; create schema public;');
  await c.end();
  await migrate(TEST_PG_URL);
}
