// Transaction control run as statements: the savepoint of one message inside the pump's business
// transaction. A transaction handler (reference data, RSTA, SCHS, EROR) runs between `savepoint`
// and `releaseSavepoint` / `rollbackToSavepoint`: a skip or a failure of that message takes back
// its writes and nothing else of the batch. Statement conventions: lib/db/statement.ts.
import { pgStatement } from '../db/statement.ts';

/** Opens the savepoint of one message of the batch. */
export const savepoint = pgStatement('tx.savepoint', 'savepoint msgx_message');

/** Keeps the message's writes (it succeeded). */
export const releaseSavepoint = pgStatement('tx.release_savepoint', 'release savepoint msgx_message');

/** Takes the message's writes back (skipped or failed). */
export const rollbackToSavepoint = pgStatement('tx.rollback_to_savepoint', 'rollback to savepoint msgx_message');
