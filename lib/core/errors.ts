// Error classes (docs/design.md "Failure classes") as data. Every failure of a message is one of these;
// lib/pipeline/failures.ts decides the next state from the class, in one place.
export type ErrorClass = 'MALFORMED' | 'PROTOCOL' | 'INFRA' | 'CODEC_ERROR' | 'INTERNAL';
/**
 * The class of a PROC_STATE reason, stored beside it (REASON_CLASS): what policy decides on, never the
 * reason text. An error class (FAILED, or DEAD for MALFORMED / PROTOCOL), EXHAUSTED (attempts used
 * up), RAW_MISSING (never read: its inbox row was gone), or why a message was SKIPPED.
 */
export type ReasonClass = ErrorClass | 'EXHAUSTED' | 'RAW_MISSING' | 'DUPLICATE' | 'UNSUPPORTED' | 'SKIPPED';

/** The services a failure can be on: a held INFRA head is probed on its service (lib/pipeline/failures.ts probeTarget). */
export type Service = 'postgres' | 'mariadb' | 'redis';
export const SERVICES: readonly Service[] = ['postgres', 'mariadb', 'redis'];

export interface Failure {
  cls: ErrorClass;
  detail: string;
  /**
   * INFRA only: the service that did not answer, when a probe of it can tell that it answers
   * again (absent: a lock or statement timeout, which a probe cannot tell apart — the message
   * waits for its backoff). Data, never read back from the detail text.
   */
  service?: Service;
}

/** Thrown by decoders and handlers; carries the class so nobody has to guess from a string. */
export class PipelineError extends Error {
  readonly failure: Failure;
  constructor(cls: ErrorClass, detail: string, options?: { cause?: unknown }) {
    super(`${cls}: ${detail}`, options);
    this.failure = { cls, detail };
  }
}

export const malformed = (detail: string) => new PipelineError('MALFORMED', detail);
export const protocol = (detail: string) => new PipelineError('PROTOCOL', detail);
export const infra = (detail: string, cause?: unknown) => new PipelineError('INFRA', detail, { cause });

/** Network/database error codes that mean "the service is unavailable", never "the message is bad". */
const INFRA_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'EAI_AGAIN',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ER_CON_COUNT_ERROR',
  'ER_SERVER_SHUTDOWN',
  'ER_LOCK_WAIT_TIMEOUT',
  'ER_LOCK_DEADLOCK',
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08003',
  '08006',
  '08001',
  '08004',
  '53300',
  '40001',
  '40P01',
]);

/**
 * A connection that cannot be set up because of the deployment's settings (TLS: unknown CA,
 * certificate for another host, expired, a server without TLS; a refused user or password):
 * the service's condition, never the message's — the message waits, counted as INFRA, and is
 * never marked DEAD for it (docs/operations.md "Production settings").
 */
/** Node's codes for a server certificate whose chain this side does not trust (lib/db/tls.ts explains them). */
export const UNTRUSTED_CHAIN_CODES: ReadonlySet<string> = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_GET_ISSUER_CERT',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
]);

const SETUP_CODES = new Set([
  ...UNTRUSTED_CHAIN_CODES,
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'ERR_SSL_WRONG_VERSION_NUMBER',
  'HANDSHAKE_NO_SSL_SUPPORT',
  'HANDSHAKE_SSL_ERROR',
  'ER_SECURE_TRANSPORT_REQUIRED',
  'ER_ACCESS_DENIED_ERROR',
  'ER_DBACCESS_DENIED_ERROR',
  '28P01',
  '28000',
  // lib/db/tls.ts ConnectionSetupError codes
  'AUTH',
  'NO_TLS',
  'TLS_REQUIRED',
  'TLS_CLIENT_CERT',
  'TLS_HANDSHAKE',
  'SASL_MECHANISM',
  'UNTRUSTED_CHAIN',
  'PLAIN_REFUSED',
]);
const SETUP_TEXT = /does not support SSL|does not speak TLS|certificate|WRONGPASS|NOAUTH|wrong version number|SASL .*authentication failed/i;

/** A connection refused for its settings (TLS, credentials): see SETUP_CODES. */
export function isConnectionSetupError(e: unknown): boolean {
  const err = e as { code?: string; message?: string; name?: string; cause?: unknown } | undefined;
  if (!err) return false;
  if (err.name === 'ConnectionSetupError') return true;
  if (err.code && SETUP_CODES.has(err.code)) return true;
  if (SETUP_TEXT.test(err.message ?? '')) return true;
  return err.cause !== undefined && err.cause !== e && isConnectionSetupError(err.cause);
}

/**
 * Postgres SQLSTATE classes that are the server's condition, never the message's: 53 insufficient
 * resources (disk full, out of memory, too many connections), 58 system / I/O error, 57P0x
 * shutdown / cannot connect now, 57014 query cancelled (statement_timeout, lock_timeout is 55P03).
 */
const INFRA_SQLSTATE = /^(53...|58...|57P0.|57014|55P03|08...)$/;

export function isInfraError(e: unknown): boolean {
  if (e instanceof PipelineError) return e.failure.cls === 'INFRA';
  const err = e as { code?: string; message?: string } | undefined;
  if (err?.code && (INFRA_CODES.has(err.code) || INFRA_SQLSTATE.test(err.code))) return true;
  if (isConnectionSetupError(e)) return true;
  const msg = err?.message ?? '';
  return /Connection terminated|connection (is )?closed|timed out|timeout|Connection is closed|ECONNREFUSED|read-only|Client has encountered a connection error|MaxRetriesPerRequest|Stream isn't writeable/i.test(
    msg,
  );
}

/** The connection to the service is gone or refused (not a timeout of a statement or a lock on a live one). */
const CONNECTION_LOST_CODES = /^(ECONNREFUSED|ECONNRESET|EPIPE|EHOSTUNREACH|ENOTFOUND|EAI_AGAIN|PROTOCOL_CONNECTION_LOST|ER_SERVER_SHUTDOWN|57P0.|08...)$/;
const CONNECTION_LOST_TEXT = /Connection terminated|connection (is )?closed|Client has encountered a connection error|ECONNREFUSED/i;

export function isConnectionLost(e: unknown): boolean {
  const err = e as { code?: string; message?: string } | undefined;
  return (!!err?.code && CONNECTION_LOST_CODES.test(err.code)) || CONNECTION_LOST_TEXT.test(err?.message ?? '') || isConnectionSetupError(e);
}

/**
 * Classify anything thrown while processing a message. `stage` says where (decode vs handler);
 * `on`: the service the failing call went to — an INFRA failure carries it when the connection
 * was lost (then a probe of that service tells when to try again).
 */
export function classify(e: unknown, stage: 'decode' | 'handler', on?: Service): Failure {
  if (e instanceof PipelineError) return e.failure;
  const detail = describe(e);
  if (isInfraError(e)) return { cls: 'INFRA', detail, ...(on && isConnectionLost(e) ? { service: on } : {}) };
  return { cls: stage === 'decode' ? 'CODEC_ERROR' : 'INTERNAL', detail };
}

export function describe(e: unknown): string {
  if (e instanceof Error) return `${e.name === 'Error' ? '' : e.name + ': '}${e.message}`.slice(0, 1000);
  return String(e).slice(0, 1000);
}
