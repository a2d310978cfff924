// Transaction control run as statements: the savepoint of one message inside the pump's business
// transaction. A transaction handler (reference data, RSTA, SCHS, EROR) runs between `savepoint`
// and `releaseSavepoint` / `rollbackToSavepoint`: a skip or a failure of that message takes back
// its writes and nothing else of the batch. Statement conventions: lib/db/statement.ts.
import { type Executor, pgRun, pgStatement } from '../db/statement.ts';

const savepointStatement = pgStatement('tx.savepoint', 'savepoint msgx_message');
/** Opens the savepoint of one message of the batch. */
export function savepoint(db: Executor): Promise<number> {
  return pgRun(db, savepointStatement);
}

const releaseSavepointStatement = pgStatement('tx.release_savepoint', 'release savepoint msgx_message');
/** Keeps the message's writes (it succeeded). */
export function releaseSavepoint(db: Executor): Promise<number> {
  return pgRun(db, releaseSavepointStatement);
}

const rollbackToSavepointStatement = pgStatement('tx.rollback_to_savepoint', 'rollback to savepoint msgx_message');
/** Takes the message's writes back (skipped or failed). */
export function rollbackToSavepoint(db: Executor): Promise<number> {
  return pgRun(db, rollbackToSavepointStatement);
}
