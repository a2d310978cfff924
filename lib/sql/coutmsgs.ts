// SQL of the AODB outbox COUTMSGS (MariaDB; outbound requests, C-4). Zone-less DATETIME
// columns hold airport local time, passed as 'YYYY-MM-DD HH:MM:SS' strings. Statement
// conventions: lib/db/statement.ts.
import { type MyExecutor, myRows, myRun, myStatement, type MyWrite, type RowOf } from '../db/statement.ts';

const findRequestRowStatement = myStatement<[routingId: string, since: string, body: string], { id: number }>(
  'coutmsgs.find_request_row',
  `SELECT COUTMSGS_ID AS id FROM coutmsgs
    WHERE ROUTINGID = ? AND COUTMSGS_DATE_INSERTED >= ? AND COUTMSGS_CLOB_MSG = ? COLLATE utf8mb4_bin
    ORDER BY COUTMSGS_ID LIMIT 1`,
);
/** The row an earlier attempt may have written: exact body (binary compare) and ROUTINGID, inserted since a local time. */
export function findRequestRow(my: MyExecutor, routingId: string, since: string, body: string): Promise<RowOf<typeof findRequestRowStatement>[]> {
  return myRows(my, findRequestRowStatement, routingId, since, body);
}

const insertRequestRowStatement = myStatement<[body: string, insertedAt: string, routingId: string]>(
  'coutmsgs.insert_request_row',
  `INSERT INTO coutmsgs (COUTMSGS_CLOB_MSG, COUTMSGS_DATE_INSERTED, ROUTINGID, COUTMSGS_TRUEFALS_GROUP,
     COUTMSGS_FINAL_GROUP_IND, COUTMSGS_ACK_REQD, COUTMSGS_ACK_RESEND_TIMES, COUTMSGS_ENCRYPT, COUTMSGS_ERROR)
   VALUES (?, ?, ?, 0, 0, 0, 0, 0, 0)`,
);
/** Inserts a request's COUTMSGS row: flag columns 0, DATE_INSERTED = the local time given. */
export function insertRequestRow(my: MyExecutor, body: string, insertedAt: string, routingId: string): Promise<MyWrite> {
  return myRun(my, insertRequestRowStatement, body, insertedAt, routingId);
}
