// TLS options for every client (pg, mysql2, ioredis, kafkajs all take Node's tls options) from a
// target's TlsSettings (lib/core/connections.ts), and the one explanation of a failed connection:
// which service, what was wrong, which setting to look at (docs/operations.md "Production
// settings"). The files are read once per settings object (a restart picks up a renewed one).
import { readFileSync } from 'node:fs';
import { checkServerIdentity, type ConnectionOptions } from 'node:tls';
import { SETTING_PREFIX, type KafkaTarget, type SaslMechanism, type ServiceName, type TlsSettings } from '../core/connections.ts';
import { scrub } from '../core/secrets.ts';
import { UNTRUSTED_CHAIN_CODES } from '../core/errors.ts';

const built = new WeakMap<TlsSettings, ConnectionOptions>();

/** Node TLS options: the CA (else the system's), the client certificate and key, always verified; verify-ca skips the host name only. */
export function tlsOptions(t: TlsSettings): ConnectionOptions {
  let o = built.get(t);
  if (!o) {
    o = {
      rejectUnauthorized: true,
      ...(t.ca ? { ca: readFileSync(t.ca, 'utf8') } : {}),
      ...(t.cert ? { cert: readFileSync(t.cert, 'utf8') } : {}),
      ...(t.key ? { key: readFileSync(t.key, 'utf8') } : {}),
      checkServerIdentity: t.mode === 'verify-ca' ? () => undefined : checkServerIdentity,
    };
    built.set(t, o);
  }
  return o;
}

/** A connection failure explained: `${service}: <what> (<which setting>)`, the original as cause. */
export class ConnectionSetupError extends Error {
  override name = 'ConnectionSetupError';
  readonly service: ServiceName;
  readonly code: string | undefined;
  constructor(service: ServiceName, message: string, code: string | undefined, cause: unknown) {
    super(message, { cause });
    this.service = service;
    this.code = code;
  }
}

const CHAIN = UNTRUSTED_CHAIN_CODES;

/** The error and its causes (kafkajs and ioredis wrap the socket's error). */
function chain(e: unknown): { code?: string; message: string; type?: string; errno?: number }[] {
  const out: { code?: string; message: string; type?: string; errno?: number }[] = [];
  let x: unknown = e;
  for (let i = 0; x && i < 5; i++) {
    const err = x as { code?: unknown; message?: unknown; type?: unknown; errno?: unknown; cause?: unknown; originalError?: unknown };
    out.push({
      code: typeof err.code === 'string' ? err.code : undefined,
      message: String(err.message ?? x),
      type: typeof err.type === 'string' ? err.type : undefined,
      errno: typeof err.errno === 'number' ? err.errno : undefined,
    });
    x = err.cause ?? err.originalError;
  }
  return out;
}

/**
 * What a failed connect or first command means for an operator, or null when it is no setup
 * problem (refused, reset, timed out: an outage, reported as it is). The message names the
 * service and the setting(s) to look at, never a secret.
 */
export function explainConnectionError(service: ServiceName, e: unknown, context: { plain?: boolean } = {}): ConnectionSetupError | null {
  if (e instanceof ConnectionSetupError) return e;
  const p = SETTING_PREFIX[service];
  const where = service === 'kafka' ? 'KAFKA_BROKERS' : `${p}_URL`;
  const all = chain(e);
  const codes = all.map((c) => c.code ?? c.type ?? '').filter(Boolean);
  const text = all.map((c) => c.message).join(' | ');
  const has = (re: RegExp) => re.test(text);
  const said = (what: string, code: string | undefined) => new ConnectionSetupError(service, scrub(`${service}: ${what}`), code, e);
  const code = codes.find((c) => CHAIN.has(c)) ?? (has(/self[- ]signed certificate|unable to verify the first certificate|unable to get local issuer certificate/i) ? 'UNTRUSTED_CHAIN' : undefined);
  if (code) return said(`the server's certificate is not signed by a CA this gateway trusts (${code}): check ${p}_TLS_CA is the CA that issued the server's certificate`, code);
  if (codes.includes('CERT_HAS_EXPIRED') || has(/certificate has expired/i))
    return said(`the server's certificate has expired (CERT_HAS_EXPIRED): renew the server's certificate (or check this machine's clock)`, 'CERT_HAS_EXPIRED');
  if (codes.includes('CERT_NOT_YET_VALID')) return said("the server's certificate is not valid yet (CERT_NOT_YET_VALID): check the clocks of this machine and the CA", 'CERT_NOT_YET_VALID');
  if (codes.includes('ERR_TLS_CERT_ALTNAME_INVALID') || has(/Hostname\/IP does not match certificate's altnames/i)) {
    const detail = all.find((c) => c.code === 'ERR_TLS_CERT_ALTNAME_INVALID')?.message ?? text;
    return said(
      `the server's certificate is for another host name (${detail.replace(/^.*?: /, '')}): the host in ${where} must be one of the certificate's names (or ${p}_TLS_MODE=verify-ca with a private CA)`,
      'ERR_TLS_CERT_ALTNAME_INVALID',
    );
  }
  if (has(/does not support SSL|Server does not support secure connection|HANDSHAKE_NO_SSL_SUPPORT/i) || codes.includes('HANDSHAKE_NO_SSL_SUPPORT'))
    return said(`the server does not speak TLS, but ${p}_TLS_MODE / ${where} ask for it: enable TLS on the server or point ${where} at one that has it`, 'NO_TLS');
  if (codes.some((c) => /^ERR_SSL_WRONG_VERSION_NUMBER|ERR_SSL_PACKET_LENGTH_TOO_LONG|ERR_SSL_HTTP_REQUEST$/.test(c)) || has(/wrong version number|packet length too long/i))
    return said(`the server answered the TLS handshake with plain text: it does not speak TLS on this port (check ${where}${service === 'redis' ? ': rediss:// vs redis://' : ''})`, 'NO_TLS');
  if (has(/certificate authentication failed/i))
    return said(`the server refused the client certificate for this user: check ${p}_TLS_CERT / ${p}_TLS_KEY (its common name must be the user in ${where})`, 'TLS_CLIENT_CERT');
  if (has(/(no pg_hba\.conf entry|pg_hba\.conf rejects connection) .*no encryption|insecure transport are prohibited|ER_SECURE_TRANSPORT_REQUIRED/i) || codes.includes('ER_SECURE_TRANSPORT_REQUIRED'))
    return said(`the server requires TLS and this connection is plain text: set ${p}_TLS_MODE=verify-full and ${p}_TLS_CA`, 'TLS_REQUIRED');
  if (has(/certificate required|tlsv13 alert certificate required|alert handshake failure|peer did not return a certificate|sslv3 alert bad certificate/i))
    return said(`the server refused the TLS handshake (it wants a client certificate, or refused ours): check ${p}_TLS_CERT and ${p}_TLS_KEY`, 'TLS_CLIENT_CERT');
  if (codes.includes('28P01') || codes.includes('ER_ACCESS_DENIED_ERROR') || has(/password authentication failed|Access denied for user|WRONGPASS|invalid username-password pair/i))
    return said(
      `the server refused the user name or password: check ${p}_PASSWORD / ${p}_PASSWORD_FILE${service === 'redis' ? ' and REDIS_USERNAME' : ''} (and the user in ${where})${
        service === 'mariadb' ? `; a user that must use TLS (REQUIRE SSL) is refused like this over plain text (${p}_TLS_MODE)` : ''
      }`,
      'AUTH',
    );
  if (service === 'postgres' && (codes.includes('28000') || has(/role ".*" does not exist|no pg_hba\.conf entry/i)))
    return said(`the server refused this login (${all[0].message}): check the user and database in ${where} (and the server's pg_hba.conf)`, 'AUTH');
  if (service === 'redis' && has(/NOAUTH|Authentication required/i)) return said('the server requires a user name and password (ACL): set REDIS_USERNAME and REDIS_PASSWORD_FILE', 'AUTH');
  if (service === 'kafka' && (codes.includes('SASL_AUTHENTICATION_FAILED') || has(/SASL .*authentication failed|Authentication failed during authentication/i)))
    return said('the broker refused the SASL user name or password: check KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD_FILE and KAFKA_SASL_MECHANISM', 'AUTH');
  if (service === 'kafka' && (codes.includes('UNSUPPORTED_SASL_MECHANISM') || has(/mechanism .* not supported|Unsupported SASL mechanism/i)))
    return said('the broker does not offer this SASL mechanism: check KAFKA_SASL_MECHANISM against the listener', 'SASL_MECHANISM');
  if (service === 'kafka' && has(/Connection error: Client network socket disconnected before secure TLS|socket disconnected before secure TLS/i))
    return said('the TLS handshake was cut off: the listener may not speak TLS, or wants SASL / a client certificate (check KAFKA_SECURITY_PROTOCOL and the broker port)', 'TLS_HANDSHAKE');
  if (service === 'kafka' && context.plain && has(/Closed connection|ECONNRESET|socket hang up/i))
    return said(
      'the broker closed the connection at once: the listener may require TLS and/or SASL (check KAFKA_SECURITY_PROTOCOL against the listener; or the broker is going down)',
      'PLAIN_REFUSED',
    );
  return null;
}

/** The error to report: explained when it is a setup problem, else as it was. */
export function explained(service: ServiceName, e: unknown, context: { plain?: boolean } = {}): Error {
  return explainConnectionError(service, e, context) ?? (e instanceof Error ? e : new Error(String(e)));
}

/** kafkajs's `ssl` and `sasl` options of a Kafka target (lib/core/connections.ts): the one factory for every Kafka client. */
type Sasl<M extends SaslMechanism = SaslMechanism> = M extends SaslMechanism ? { mechanism: M; username: string; password: string } : never;

export function kafkaSecurity(t: KafkaTarget | undefined): { ssl?: ConnectionOptions; sasl?: Sasl } {
  if (!t) return {};
  return {
    ...(t.tls ? { ssl: tlsOptions(t.tls) } : {}),
    ...(t.sasl ? { sasl: { mechanism: t.sasl.mechanism, username: t.sasl.username, password: t.sasl.password } as Sasl } : {}),
  };
}
