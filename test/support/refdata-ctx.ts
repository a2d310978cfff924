// Helpers for the refdata/requests tests: run a message through the registered handlers inside
// a Kysely transaction (as the pump would: a skipped outcome rolls back), and the MariaDB outbox.
import mysql from 'mysql2/promise';
import { pino } from 'pino';
import { createPool } from '../../lib/db/postgres.ts';
import { createQueryDb, type QueryDb } from '../../lib/db/kysely.ts';
import { HandlerRegistry, type HandlerOutcome } from '../../lib/domain/handlers.ts';
import { PipelineError, type Failure } from '../../lib/core/errors.ts';
import { decodeEnvelope } from '../../lib/sis/envelope.ts';
import { registerRefdataHandlers } from '../../lib/refdata/handlers.ts';
import { slices, type Config } from '../../lib/core/config.ts';
import { TEST_INBOX_URL, TEST_PG_URL } from './env.ts';

export const silentLog = pino({ level: 'silent' });

export function testDb(): QueryDb {
  return createQueryDb(createPool(TEST_PG_URL, { max: 4, name: 'refdata-test' }));
}

export type ApplyResult = HandlerOutcome | { outcome: 'failed'; failure: Failure } | { outcome: 'unsupported' };

class Rollback extends Error {
  readonly result: HandlerOutcome;
  constructor(result: HandlerOutcome) {
    super('rollback');
    this.result = result;
  }
}

/** Decode and apply one raw SIS message through the refdata handlers; errors become data. */
export async function applyMessage(db: QueryDb, a: { xml: string; msgId: number; now: Date; config: Config; registry?: HandlerRegistry }): Promise<ApplyResult> {
  const registry = a.registry ?? registerRefdataHandlers(new HandlerRegistry());
  try {
    const env = decodeEnvelope(a.xml);
    const handler = registry.resolve(env.type, env.styp);
    if (!handler) return { outcome: 'unsupported' };
    return await db.transaction().execute(async (tx) => {
      const out = await handler({ tx, msgId: a.msgId, env, now: a.now, airport: slices(a.config).airport, log: silentLog });
      if (out.outcome === 'skipped') throw new Rollback(out);
      return out;
    });
  } catch (e) {
    if (e instanceof Rollback) return e.result;
    if (e instanceof PipelineError) return { outcome: 'failed', failure: e.failure };
    throw e;
  }
}

/** A reference message by hand. */
export function refXml(type: string, styp: string, recordsXml: string[], recs: number | null = recordsXml.length, seqn = 1): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<MSG><META><SNDR>AODB</SNDR><SEQN>${seqn}</SEQN><DTTM>20261201080000</DTTM><TYPE>${type}</TYPE><STYP>${styp}</STYP></META>
${recs === null ? '' : `<RECS>${recs}</RECS>`}
${recordsXml.join('\n')}
</MSG>`;
}

const COUTMSGS_DDL = `CREATE TABLE IF NOT EXISTS coutmsgs (
  COUTMSGS_ID bigint(20) NOT NULL AUTO_INCREMENT,
  COUTMSGS_CLOB_MSG MEDIUMTEXT,
  COUTMSGS_DATE_INSERTED datetime NOT NULL,
  COUTMSGS_DATE_SENT datetime,
  ROUTINGID VARCHAR(23) NOT NULL,
  COUTMSGS_TRUEFALS_GROUP TINYINT DEFAULT 0 NOT NULL,
  COUTMSGS_NO_MESSAGES TINYINT,
  COUTMSGS_GROUP_ORDER TINYINT,
  COUTMSGS_GROUP_ID SMALLINT,
  COUTMSGS_FINAL_GROUP_IND TINYINT DEFAULT 0 NOT NULL,
  COUTMSGS_ACK_REQD TINYINT DEFAULT 0 NOT NULL,
  COUTMSGS_ACK_RESEND_TIMES TINYINT DEFAULT 0 NOT NULL,
  COUTMSGS_ACK_DATE_RECV datetime,
  COUTMSGS_ENCRYPT TINYINT DEFAULT 0 NOT NULL,
  COUTMSGS_ERROR TINYINT DEFAULT 0 NOT NULL,
  PRIMARY KEY (COUTMSGS_ID)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`;

/** The MariaDB outbox of the tests; creates database and table when scripts/services has not. */
export async function testOutbox(): Promise<mysql.Pool> {
  const url = new URL(TEST_INBOX_URL);
  const dbName = url.pathname.slice(1);
  const admin = await mysql.createConnection({ host: url.hostname, port: Number(url.port || 3306), user: decodeURIComponent(url.username), password: decodeURIComponent(url.password) });
  await admin.query(`CREATE DATABASE IF NOT EXISTS \`${dbName}\` CHARACTER SET utf8mb4`);
  await admin.end();
  const pool = mysql.createPool({ uri: TEST_INBOX_URL, connectionLimit: 2 });
  await pool.query(COUTMSGS_DDL);
  return pool;
}
