// SQL of ACCESS_AUDIT (who did what over HTTP). Statement conventions: lib/db/statement.ts.
import { type Executor, pgRun, pgStatement } from '../db/statement.ts';

// ---- lib/access/trail.ts

/** One audit row, in the insert's parameter order. */
type AuditRow = [
  at: Date,
  process: string,
  requestId: string | null,
  via: string | null,
  subject: string | null,
  subjectName: string | null,
  role: string | null,
  ip: string | null,
  method: string,
  route: string,
  action: string,
  status: number,
  outcome: string,
  touched: string | null,
  selection: string | null,
  result: string | null,
  suppressed: number,
];

const insertStatement = pgStatement<AuditRow>(
  'access_audit.insert',
  `insert into access_audit (at, process, request_id, via, subject, subject_name, role, ip, method, route, action, status, outcome, touched, selection, result, suppressed)
   values ($1::timestamptz, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text, $9::text, $10::text, $11::text, $12::integer, $13::text,
           $14::jsonb, $15::jsonb, $16::jsonb, $17::integer)`,
);
/** Appends one audit row; the JSON columns as text. */
export function insert(db: Executor, ...row: AuditRow): Promise<number> {
  return pgRun(db, insertStatement, ...row);
}

// ---- lib/lifecycle/access-audit.ts

const deleteBeforeStatement = pgStatement<[cutoff: Date, batch: number]>(
  'access_audit.delete_before',
  `delete from access_audit where id = any(array(
     select id from access_audit where at < $1::timestamptz order by at, id limit $2::bigint))`,
);
/** Deletes up to $2 rows (oldest first) older than $1. */
export function deleteBefore(db: Executor, cutoff: Date, batch: number): Promise<number> {
  return pgRun(db, deleteBeforeStatement, cutoff, batch);
}
