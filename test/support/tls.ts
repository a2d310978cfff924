// Secured services for the TLS tests (test/integration/tls-*.test.ts): a CA and certificates made
// with openssl, and real servers started by the test with TLS (and passwords / ACL / SASL)
// required, each on its own port with its own data directory under .local/tls/<service>
// (git-ignored). Each start returns a stop(); a test stops what it started.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { freePort } from './ports.ts';
import { endWithThisProcess } from './processes.ts';

export const TLS_ROOT = resolve('.local/tls');

/** A fresh directory .local/tls/<name> (emptied first). */
export function freshDir(name: string): string {
  const dir = join(TLS_ROOT, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  return dir;
}

const openssl = (dir: string, args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });

export interface Pair {
  cert: string;
  key: string;
}

export interface Pki {
  dir: string;
  /** The CA every good certificate chains to. */
  ca: string;
  /** Another CA (a wrong DATABASE_TLS_CA and co.). */
  otherCa: string;
  /** Server certificate for IP 127.0.0.1 only (a client asking for "localhost" sees another host name). */
  server: Pair;
  /** The same names, expired yesterday. */
  expired: Pair;
  /** A client certificate (mutual TLS) with the given common name. */
  client: Pair;
}

/**
 * A CA, a server certificate (IP:127.0.0.1), an expired one, a client certificate (CN clientCn)
 * and an unrelated CA, all EC P-256 PEM (PKCS#8 keys, which Kafka's PEM key stores take too).
 */
export function makePki(dir: string, clientCn = 'msgx-client'): Pki {
  const key = (name: string) => openssl(dir, ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', `${name}.key`]);
  const selfSigned = (name: string, cn: string) => {
    key(name);
    openssl(dir, [
      'req',
      '-x509',
      '-new',
      '-key',
      `${name}.key`,
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-subj',
      `/CN=${cn}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]);
  };
  selfSigned('ca', 'msgx test CA');
  selfSigned('other-ca', 'some other CA');
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n');
  writeFileSync(join(dir, 'client.ext'), 'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n');
  const csr = (name: string, cn: string) => {
    key(name);
    openssl(dir, ['req', '-new', '-key', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`]);
  };
  csr('server', '127.0.0.1');
  openssl(dir, ['x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '2', '-extfile', 'server.ext']);
  csr('client', clientCn);
  openssl(dir, ['x509', '-req', '-in', 'client.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'client.pem', '-days', '2', '-extfile', 'client.ext']);
  // expired: `openssl ca` sets explicit dates (x509 -days cannot go back)
  csr('expired', '127.0.0.1');
  mkdirSync(join(dir, 'ca-db'), { recursive: true });
  writeFileSync(join(dir, 'ca-db/index.txt'), '');
  writeFileSync(join(dir, 'ca-db/serial'), '1000\n');
  writeFileSync(
    join(dir, 'ca.cnf'),
    `[ca]\ndefault_ca=d\n[d]\ndir=${dir}/ca-db\ndatabase=$dir/index.txt\nnew_certs_dir=$dir\nserial=$dir/serial\ndefault_md=sha256\npolicy=p\nunique_subject=no\n[p]\ncommonName=supplied\n`,
  );
  openssl(dir, [
    'ca',
    '-batch',
    '-notext',
    '-config',
    'ca.cnf',
    '-cert',
    'ca.pem',
    '-keyfile',
    'ca.key',
    '-in',
    'expired.csr',
    '-out',
    'expired.pem',
    '-startdate',
    '20200101000000Z',
    '-enddate',
    '20200102000000Z',
    '-extfile',
    'server.ext',
  ]);
  for (const f of ['ca.key', 'other-ca.key', 'server.key', 'client.key', 'expired.key']) chmodSync(join(dir, f), 0o600);
  const p = (f: string) => join(dir, f);
  return {
    dir,
    ca: p('ca.pem'),
    otherCa: p('other-ca.pem'),
    server: { cert: p('server.pem'), key: p('server.key') },
    expired: { cert: p('expired.pem'), key: p('expired.key') },
    client: { cert: p('client.pem'), key: p('client.key') },
  };
}

/** A file holding a secret (mode 0600), as a Docker / Kubernetes secret would be mounted. */
export function secretFile(dir: string, name: string, value: string): string {
  const f = join(dir, name);
  writeFileSync(f, `${value}\n`, { mode: 0o600 });
  return f;
}

/** Wait until fn() is truthy (polling), or throw naming what. */
export async function until<T>(what: string, fn: () => Promise<T | false | undefined> | T | false | undefined, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v) return v as T;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
}

// --- Postgres -------------------------------------------------------------------------------

const PG_BIN = '/usr/lib/postgresql/15/bin';

export interface SecurePostgres {
  port: number;
  dir: string;
  /** postgres://msgx@127.0.0.1:<port>/<db> (no password: give it apart). */
  url(db?: string): string;
  /** Serve another certificate (ssl_cert_file / ssl_key_file, reloaded). */
  useCert(pair: Pair): void;
  /** Run SQL as the superuser over the server's own Unix socket (no TLS needed there). */
  psql(sql: string, db?: string): string;
  stop(): void;
}

/**
 * Postgres 15 with TLS required for every TCP connection (hostssl only), scram-sha-256 for user
 * msgx (password given), and certificate authentication for user `certuser` (mutual TLS).
 */
export async function startPostgres(pki: Pki, password: string): Promise<SecurePostgres> {
  const dir = freshDir('postgres');
  const port = await freePort();
  const data = join(dir, 'data');
  // Postgres never runs as root: its files belong to the postgres user (the key too, mode 0600)
  const asPg = (cmd: string, args: string[]) => execFileSync('runuser', ['-u', 'postgres', '--', cmd, ...args], { stdio: 'ignore' });
  execFileSync('chown', ['postgres:postgres', dir]);
  const own = (pair: Pair, name: string): Pair => {
    const out = { cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) };
    copyFileSync(pair.cert, out.cert);
    copyFileSync(pair.key, out.key);
    execFileSync('chown', ['postgres:postgres', out.cert, out.key]);
    chmodSync(out.key, 0o600);
    return out;
  };
  const first = own(pki.server, 'server');
  const ca = join(dir, 'ca.pem');
  copyFileSync(pki.ca, ca);
  execFileSync('chmod', ['644', ca]);
  asPg(join(PG_BIN, 'initdb'), ['-D', data, '-U', 'postgres', '--auth-local=trust', '--auth-host=reject', '-E', 'UTF8', '--no-sync']);
  writeFileSync(
    join(data, 'postgresql.auto.conf'),
    [
      `port = ${port}`,
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${dir}'`,
      'ssl = on',
      `ssl_cert_file = '${first.cert}'`,
      `ssl_key_file = '${first.key}'`,
      `ssl_ca_file = '${ca}'`,
      "password_encryption = 'scram-sha-256'",
      'fsync = off',
      'shared_buffers = 16MB',
      'max_connections = 60',
      "log_min_messages = 'warning'",
      '',
    ].join('\n'),
  );
  writeFileSync(
    join(data, 'pg_hba.conf'),
    ['local all all trust', 'hostssl all certuser 127.0.0.1/32 cert', 'hostssl all all 127.0.0.1/32 scram-sha-256', 'hostnossl all all 0.0.0.0/0 reject', ''].join('\n'),
  );
  execFileSync('chown', ['postgres:postgres', join(data, 'postgresql.auto.conf'), join(data, 'pg_hba.conf')]);
  asPg(join(PG_BIN, 'pg_ctl'), ['-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '60', 'start']);
  endWithThisProcess(join(data, 'postmaster.pid')); // pg_ctl gives the postmaster a session of its own
  const psql = (sql: string, db = 'postgres') => execFileSync('psql', ['-h', dir, '-p', String(port), '-U', 'postgres', '-d', db, '-XAtqc', sql], { encoding: 'utf8' });
  psql(`create role msgx login password '${password.replace(/'/g, "''")}' createdb`);
  psql('create role certuser login');
  psql('create database msgx_tls owner msgx');
  psql('grant all on database msgx_tls to certuser');
  psql('alter database msgx_tls set search_path = public');
  psql('grant all on schema public to certuser', 'msgx_tls');
  return {
    port,
    dir,
    url: (db = 'msgx_tls') => `postgres://msgx@127.0.0.1:${port}/${db}`,
    useCert(pair) {
      const p = own(pair, `cert-${Date.now()}`);
      psql(`alter system set ssl_cert_file = '${p.cert}'`);
      psql(`alter system set ssl_key_file = '${p.key}'`);
      psql('select pg_reload_conf()');
    },
    psql,
    stop() {
      if (existsSync(join(data, 'postmaster.pid'))) asPg(join(PG_BIN, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
    },
  };
}

// --- Redis ----------------------------------------------------------------------------------

export interface SecureRedis {
  port: number;
  /** rediss://127.0.0.1:<port>/0 (no credentials: give them apart). */
  url: string;
  useCert(pair: Pair): Promise<void>;
  stop(): Promise<void>;
}

/** redis-server with TLS only (port 0), the default user off and ACL user `msgx` with the password. */
export async function startRedis(pki: Pki, password: string): Promise<SecureRedis> {
  const dir = freshDir('redis');
  const port = await freePort();
  const conf = join(dir, 'redis.conf');
  writeFileSync(
    conf,
    [
      'port 0',
      `tls-port ${port}`,
      'bind 127.0.0.1',
      `tls-cert-file ${pki.server.cert}`,
      `tls-key-file ${pki.server.key}`,
      `tls-ca-cert-file ${pki.ca}`,
      'tls-auth-clients optional',
      `dir ${dir}`,
      'save ""',
      'appendonly no',
      'daemonize no',
      `logfile ${join(dir, 'redis.log')}`,
      'user default off',
      `user msgx on >${password} ~* &* +@all`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  const child = spawn('redis-server', [conf], { stdio: 'ignore' });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const cli = (...args: string[]) =>
    // --insecure: the test's admin connection also works while the server shows the expired certificate
    execFileSync('redis-cli', ['--tls', '--insecure', '-h', '127.0.0.1', '-p', String(port), '--user', 'msgx', ...args], { encoding: 'utf8', env: { ...process.env, REDISCLI_AUTH: password } });
  await until('secured redis', () => cli('PING').includes('PONG'), 20_000);
  return {
    port,
    url: `rediss://127.0.0.1:${port}/0`,
    async useCert(pair) {
      cli('CONFIG', 'SET', 'tls-cert-file', pair.cert, 'tls-key-file', pair.key);
    },
    async stop() {
      stopChild(child);
      await exited;
    },
  };
}

function stopChild(child: ChildProcess): void {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
  child.once('exit', () => clearTimeout(t));
}

// --- MariaDB --------------------------------------------------------------------------------

export interface SecureMariadb {
  port: number;
  /** mysql://msgx@127.0.0.1:<port>/aodbinterface (no password: give it apart). */
  url: string;
  /** SQL as root over the server's own Unix socket. */
  sql(text: string): string;
  useCert(pair: Pair): void;
  stop(): Promise<void>;
}

/** mariadbd with require_secure_transport, user msgx@127.0.0.1 (REQUIRE SSL) with the password, the AODB tables. */
export async function startMariadb(pki: Pki, password: string): Promise<SecureMariadb> {
  const dir = freshDir('mariadb');
  const port = await freePort();
  const data = join(dir, 'data');
  const sock = join(dir, 'mysqld.sock');
  // the served certificate at a fixed path: ssl_cert is read-only, FLUSH SSL reads the files again
  const served = { cert: join(dir, 'served.pem'), key: join(dir, 'served.key') };
  const serve = (pair: Pair) => {
    copyFileSync(pair.cert, served.cert);
    copyFileSync(pair.key, served.key);
    chmodSync(served.key, 0o600);
  };
  serve(pki.server);
  execFileSync('mariadb-install-db', ['--no-defaults', `--datadir=${data}`, '--auth-root-authentication-method=socket', '--skip-test-db', '--user=root'], { stdio: 'ignore' });
  const child = spawn(
    '/usr/sbin/mariadbd',
    [
      '--no-defaults',
      `--datadir=${data}`,
      `--port=${port}`,
      '--bind-address=127.0.0.1',
      `--socket=${sock}`,
      `--pid-file=${join(dir, 'mysqld.pid')}`,
      `--log-error=${join(dir, 'error.log')}`,
      `--ssl-ca=${pki.ca}`,
      `--ssl-cert=${served.cert}`,
      `--ssl-key=${served.key}`,
      '--require-secure-transport=ON',
      '--skip-name-resolve',
      '--innodb-buffer-pool-size=16M',
      '--innodb-log-file-size=8M',
      '--skip-log-bin',
      '--user=root',
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const sql = (text: string) => execFileSync('mariadb', [`--socket=${sock}`, '-uroot', '-N', '-B', '-e', text], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  await until('secured mariadb', () => sql('select 1').trim() === '1', 60_000);
  const schema = execFileSync('cat', [resolve('sql/mysql/aodbinterface.sql')], { encoding: 'utf8' });
  sql('create database aodbinterface');
  execFileSync('mariadb', [`--socket=${sock}`, '-uroot', 'aodbinterface'], { input: schema });
  sql(`create user 'msgx'@'127.0.0.1' identified by '${password.replace(/'/g, "''")}' require ssl; grant all on aodbinterface.* to 'msgx'@'127.0.0.1'`);
  return {
    port,
    url: `mysql://msgx@127.0.0.1:${port}/aodbinterface`,
    sql,
    useCert(pair) {
      serve(pair);
      sql('flush ssl');
    },
    async stop() {
      stopChild(child);
      await exited;
    },
  };
}

// --- Kafka ----------------------------------------------------------------------------------

export interface SecureKafka {
  port: number;
  brokers: string;
  stop(): Promise<void>;
}

/** The Kafka jars' classpath scripts/services caches (scripts/kafka/README.md); KAFKA_CLASSPATH_FILE names another copy. */
const KAFKA_CLASSPATH = process.env.KAFKA_CLASSPATH_FILE ?? resolve('.local/kafka/classpath.txt');

export const kafkaAvailable = () => existsSync(KAFKA_CLASSPATH);

/**
 * A single-node Kafka 4 (KRaft) broker whose client listeners are SASL_SSL only (SCRAM-SHA-512
 * and PLAIN; PEM key stores; client certificates requested), user msgx with the password
 * (SCRAM credentials formatted into the storage, PLAIN in the JAAS config). The classpath is the
 * one scripts/services cached. (No listener with an expired certificate: Kafka test-handshakes its
 * own key store at start and refuses one; see tlsFront.)
 */
export async function startKafka(pki: Pki, password: string): Promise<SecureKafka> {
  const dir = freshDir('kafka');
  const [port, controller] = [await freePort(), await freePort()];
  const { readFileSync } = await import('node:fs');
  const pemLine = (f: string) => readFileSync(f, 'utf8').trim().replace(/\n/g, ' \\\n  ');
  const jaas = (user: string, pw: string) => `org.apache.kafka.common.security.scram.ScramLoginModule required username="${user}" password="${pw}";`;
  const plainJaas = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_msgx="${password}";`;
  const listenerSsl = (name: string, pair: Pair) =>
    [
      `listener.name.${name}.ssl.keystore.type=PEM`,
      `listener.name.${name}.ssl.keystore.certificate.chain=${pemLine(pair.cert)}`,
      `listener.name.${name}.ssl.keystore.key=${pemLine(pair.key)}`,
      `listener.name.${name}.ssl.truststore.type=PEM`,
      `listener.name.${name}.ssl.truststore.certificates=${pemLine(pki.ca)}`,
      `listener.name.${name}.ssl.client.auth=requested`,
      `listener.name.${name}.sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN`,
      `listener.name.${name}.scram-sha-512.sasl.jaas.config=${jaas('admin', 'admin-secret')}`,
      `listener.name.${name}.plain.sasl.jaas.config=${plainJaas}`,
    ].join('\n');
  const props = [
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@127.0.0.1:${controller}`,
    `listeners=SECURE://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controller}`,
    `advertised.listeners=SECURE://127.0.0.1:${port}`,
    'listener.security.protocol.map=SECURE:SASL_SSL,CONTROLLER:PLAINTEXT',
    'inter.broker.listener.name=SECURE',
    'sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512',
    'controller.listener.names=CONTROLLER',
    'ssl.endpoint.identification.algorithm=',
    listenerSsl('secure', pki.server),
    `log.dirs=${join(dir, 'data')}`,
    'num.partitions=1',
    'offsets.topic.replication.factor=1',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'group.initial.rebalance.delay.ms=0',
    'auto.create.topics.enable=false',
    '',
  ].join('\n');
  const config = join(dir, 'server.properties');
  writeFileSync(config, props, { mode: 0o600 });
  const cp = readFileSync(KAFKA_CLASSPATH, 'utf8').trim();
  const java = ['-Xmx384m', '-Xms128m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-cp', cp];
  execFileSync(
    'java',
    [
      ...java,
      'kafka.tools.StorageTool',
      'format',
      '-t',
      'MkU3OEVBNTcwNTJENDM2Qg',
      '-c',
      config,
      '--add-scram',
      `SCRAM-SHA-512=[name=msgx,password=${password}]`,
      '--add-scram',
      'SCRAM-SHA-512=[name=admin,password=admin-secret]',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const log = join(dir, 'server.log');
  const { openSync } = await import('node:fs');
  const out = openSync(log, 'a');
  const child = spawn('java', [...java, 'kafka.Kafka', config], { stdio: ['ignore', out, out] });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    port,
    brokers: `127.0.0.1:${port}`,
    async stop() {
      stopChild(child);
      await exited;
    },
  };
}

/**
 * A TLS server with the given certificate in front of a TCP port (it decrypts and passes bytes
 * on): what a client sees of a server whose certificate expired, where the server itself (Kafka)
 * refuses to run with one.
 */
export async function tlsFront(pair: Pair, toPort: number): Promise<{ port: number; close(): Promise<void> }> {
  const tls = await import('node:tls');
  const net = await import('node:net');
  const { readFileSync } = await import('node:fs');
  const server = tls.createServer({ cert: readFileSync(pair.cert), key: readFileSync(pair.key) }, (client) => {
    const upstream = net.connect(toPort, '127.0.0.1');
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as { port: number }).port,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
