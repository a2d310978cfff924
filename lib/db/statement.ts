// Statements: static SQL text, a stable name, a typed row (docs/decisions.md
// "SQL: static statements in lib/sql/"). Every statement of lib/ is declared in
// `lib/sql/<table group>.ts` (or `lib/sql/<group>/<part>.ts`) with `pgStatement` / `myStatement`,
// unexported, beside the one *operation* that runs it with the functions below: an async
// function taking an Executor and typed arguments, returning a typed result. Every other module
// calls operations; none writes SQL text, declares or runs a statement, or imports one
// (`npm run check:sql`).
//
// Postgres statements run as NAMED prepared statements: node-postgres sends the text once per
// connection, Postgres parses and plans it once, afterwards only the parameters travel. After
// five executions Postgres may switch a named statement to its GENERIC plan (one plan for any
// parameter values): the statements are shaped so that plan is as good as the per-value one
// (test/integration/plan-regression.test.ts). A statement declared with `{ plan: 'per-execution' }`
// runs unnamed instead: parsed and planned with its parameter values every time (the choice and
// its reason per statement: docs/decisions.md "SQL: plans of the prepared statements"). The name
// is also what an operator sees in errors (`err.statement`) and in pg_stat_activity's query text
// (each text starts with `-- <name>`).
import type mysql from 'mysql2/promise';
import type { RawNode } from 'kysely';
import type { Db } from './postgres.ts';

/** Anything that runs a query: a pool's, a session's or a transaction's Db (lib/db/postgres.ts), or a Kysely. */
export type Executor = Pick<Db, 'executeQuery'>;

declare const PARAMS: unique symbol;
declare const ROW: unique symbol;

/** A Postgres statement: `$1…$n` placeholders typed by `P`, result rows typed by `R`. */
export interface PgStatement<P extends readonly unknown[], R> {
  readonly name: string;
  readonly text: string;
  readonly arity: number;
  /** 'prepared': a named prepared statement (generic plan after five runs); 'per-execution': unnamed, planned with its values each run. */
  readonly plan: PgPlan;
  readonly [PARAMS]?: P;
  readonly [ROW]?: R;
}

/** The row type of a statement (for a caller that names it, e.g. a function parameter). */
export type RowOf<S> = S extends PgStatement<infer _P, infer R> ? R : S extends MyStatement<infer _Q, infer W> ? W : never;

/** A MariaDB statement (the AODB inbox/outbox): `?` placeholders typed by `P`, rows typed by `R`. */
export interface MyStatement<P extends readonly unknown[], R> {
  readonly name: string;
  readonly text: string;
  readonly arity: number;
  readonly [PARAMS]?: P;
  readonly [ROW]?: R;
}

/** A row count / insert ID outcome of a MariaDB write. */
export interface MyWrite {
  affectedRows: number;
  insertId: number;
}

const declared = new Map<string, { engine: 'pg' | 'mysql'; text: string; plan?: PgPlan }>();
const NAME = /^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$/;

function declare(name: string, engine: 'pg' | 'mysql', text: string, plan?: PgPlan): void {
  if (!NAME.test(name)) throw new Error(`statement name ${name}: expected <group>.<operation> in snake_case`);
  const prev = declared.get(name);
  if (prev !== undefined && prev.text !== text) throw new Error(`statement ${name} declared twice with different text`);
  declared.set(name, { engine, text, ...(plan ? { plan } : {}) });
}

/** How a Postgres statement is planned (lib/db/statement.ts header). */
export type PgPlan = 'prepared' | 'per-execution';

/** The option of a statement planned with its values on every run (`pgStatement(name, text, PER_EXECUTION)`). */
export const PER_EXECUTION = { plan: 'per-execution' } as const;

/** Declares a Postgres statement. Text built from rule tables is built once, at module load. */
export function pgStatement<P extends readonly unknown[] = [], R = never>(name: string, text: string, o: { plan?: PgPlan } = {}): PgStatement<P, R> {
  const body = `-- ${name}\n${text.trim()}`;
  const plan = o.plan ?? 'prepared';
  declare(name, 'pg', body, plan);
  const arity = Math.max(0, ...[...body.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
  return { name, text: body, arity, plan };
}

/** Declares a MariaDB statement (`IN (?)` takes an array: mysql2 expands it client-side). */
export function myStatement<P extends readonly unknown[] = [], R = never>(name: string, text: string): MyStatement<P, R> {
  declare(name, 'mysql', text.trim());
  return { name, text: text.trim(), arity: (text.match(/\?/g) ?? []).length };
}

/** Every declared statement (name → engine, text, and a Postgres statement's plan choice): the catalogue the tests check. */
export function declaredStatements(): ReadonlyMap<string, { engine: 'pg' | 'mysql'; text: string; plan?: PgPlan }> {
  return declared;
}

function tagged(e: unknown, name: string): unknown {
  if (e && typeof e === 'object') Object.assign(e, { statement: name });
  return e;
}

async function execPg<P extends readonly unknown[], R>(db: Executor, st: PgStatement<P, R>, params: P) {
  if (params.length !== st.arity) throw new Error(`statement ${st.name}: ${st.arity} placeholders, ${params.length} parameters`);
  // `sql` goes to pg's client.query unchanged (Kysely's executor does the same): a {name, text}
  // config makes it a named statement, the plain text an unnamed one (planned with these values).
  // The query node is what Kysely's CompiledQuery.raw builds; a Kysely executor (tests) reads only sql and parameters.
  const q = { query: { kind: 'RawNode', sqlFragments: [st.text], parameters: [] } as RawNode, queryId: { queryId: st.name }, parameters: params as unknown as unknown[] };
  try {
    if (st.plan === 'per-execution') return await db.executeQuery<R>({ ...q, sql: st.text });
    return await db.executeQuery<R>({ ...q, sql: { name: st.name, text: st.text } as unknown as string });
  } catch (e) {
    throw tagged(e, st.name);
  }
}

declare const elements: unique symbol;
/** An array parameter as its Postgres literal (pgArray); the element type stays in the statement's signature. */
export type PgArray<T> = string & { readonly [elements]: T };

const ESCAPED = /[\\"]/;
/**
 * A one-dimensional array parameter as the literal node-postgres sends for a JS array (its
 * arrayString: `{"a","b\\"c",NULL}`), built in one pass and joined once. The driver then copies the
 * string as it is: a large write builds its parameters ahead, while the statement before runs
 * (lib/flight/store.ts runSlices).
 */
export function pgArray<T extends string | number | boolean | null | undefined>(values: readonly T[]): PgArray<T> {
  const parts = new Array<string>(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === null || v === undefined) parts[i] = 'NULL';
    else {
      const s = String(v);
      parts[i] = ESCAPED.test(s) ? `"${s.replace(/[\\"]/g, '\\$&')}"` : `"${s}"`;
    }
  }
  return `{${parts.join(',')}}` as PgArray<T>;
}

/** The rows of a Postgres statement. */
export async function pgRows<P extends readonly unknown[], R>(db: Executor, st: PgStatement<P, R>, ...params: P): Promise<R[]> {
  return (await execPg(db, st, params)).rows;
}

/** The first row of a Postgres statement (undefined when none). */
export async function pgOne<P extends readonly unknown[], R>(db: Executor, st: PgStatement<P, R>, ...params: P): Promise<R | undefined> {
  return (await execPg(db, st, params)).rows[0];
}

/** Runs a Postgres write; returns the rows it affected. */
export async function pgRun<P extends readonly unknown[], R>(db: Executor, st: PgStatement<P, R>, ...params: P): Promise<number> {
  return Number((await execPg(db, st, params)).numAffectedRows ?? 0);
}

export type MyExecutor = Pick<mysql.Pool, 'query'> | Pick<mysql.PoolConnection, 'query'>;

/** The rows of a MariaDB statement. */
export async function myRows<P extends readonly unknown[], R>(my: MyExecutor, st: MyStatement<P, R>, ...params: P): Promise<R[]> {
  if (params.length !== st.arity) throw new Error(`statement ${st.name}: ${st.arity} placeholders, ${params.length} parameters`);
  try {
    const [rows] = await my.query<mysql.RowDataPacket[]>(st.text, params as unknown as unknown[]);
    return rows as R[];
  } catch (e) {
    throw tagged(e, st.name);
  }
}

/** Runs a MariaDB write. */
export async function myRun<P extends readonly unknown[], R>(my: MyExecutor, st: MyStatement<P, R>, ...params: P): Promise<MyWrite> {
  if (params.length !== st.arity) throw new Error(`statement ${st.name}: ${st.arity} placeholders, ${params.length} parameters`);
  try {
    const [res] = await my.query<mysql.ResultSetHeader>(st.text, params as unknown as unknown[]);
    return { affectedRows: res.affectedRows, insertId: Number(res.insertId) };
  } catch (e) {
    throw tagged(e, st.name);
  }
}
