// A Postgres primary and its streaming standby of the project's own (docs/operations.md
// "Production topology"): initdb a primary into a data directory under .local/, pg_basebackup a
// standby from it, each on its own port; synchronous (synchronous_standby_names) or asynchronous.
// The machine's Postgres (5432) is never touched. Used by scripts/topology.ts and the drills.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const PG_BIN = '/usr/lib/postgresql/15/bin';
const STANDBY_NAME = 'msgx_standby';

export interface PgNode {
  name: string;
  port: number;
  data: string;
  /** postgres://postgres@127.0.0.1:<port>/<db> */
  url(db?: string): string;
  psql(sql: string, db?: string): string;
  running(): boolean;
  /** SIGKILL the postmaster (what a crash of the host does to it). */
  kill(): void;
  start(): void;
  stop(): void;
  /** pg_ctl promote (a standby becomes a primary). */
  promote(): void;
}

export interface PgPair {
  primary: PgNode;
  standby: PgNode;
  sync: boolean;
  /** postgres://postgres@127.0.0.1:<standby>,127.0.0.1:<primary>/<db>?target_session_attrs=read-write */
  hostListUrl(db?: string): string;
  stop(): void;
}

const asPg = (cmd: string, args: string[]) => execFileSync('runuser', ['-u', 'postgres', '--', join(PG_BIN, cmd), ...args], { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });

function node(name: string, dir: string, port: number): PgNode {
  const data = join(dir, 'data');
  const pidFile = join(data, 'postmaster.pid');
  const self: PgNode = {
    name,
    port,
    data,
    url: (db = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${db}`,
    psql: (sql, db = 'postgres') => execFileSync('psql', ['-h', dir, '-p', String(port), '-U', 'postgres', '-d', db, '-XAtqc', sql], { encoding: 'utf8' }).trim(),
    running: () => existsSync(pidFile),
    kill() {
      if (!existsSync(pidFile)) return;
      const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
      rmSync(pidFile, { force: true }); // the next start must not wait for a dead postmaster's file
    },
    start: () => void asPg('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '60', 'start']),
    stop() {
      if (existsSync(pidFile)) asPg('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
    },
    promote: () => void asPg('pg_ctl', ['-D', data, '-w', '-t', '60', 'promote']),
  };
  return self;
}

function ownedDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  execFileSync('chown', ['postgres:postgres', dir]);
}

function conf(data: string, lines: string[], append = false): void {
  const f = join(data, 'postgresql.auto.conf');
  const text = `${lines.join('\n')}\n`;
  writeFileSync(f, append ? readFileSync(f, 'utf8') + text : text);
  execFileSync('chown', ['postgres:postgres', f]);
}

/** A fresh primary (root/primary) and standby (root/standby); `sync`: the primary waits for the standby's flush at every commit. */
export function startPgPair(root: string, ports: { primary: number; standby: number }, sync: boolean): PgPair {
  const pDir = join(root, 'primary');
  const sDir = join(root, 'standby');
  mkdirSync(root, { recursive: true });
  ownedDir(pDir);
  ownedDir(sDir);
  const primary = node('primary', pDir, ports.primary);
  const standby = node('standby', sDir, ports.standby);
  asPg('initdb', ['-D', primary.data, '-U', 'postgres', '--auth-local=trust', '--auth-host=trust', '-E', 'UTF8', '--no-sync']);
  const common = ["listen_addresses = '127.0.0.1'", 'wal_level = replica', 'max_wal_senders = 5', 'hot_standby = on', 'shared_buffers = 32MB', 'max_connections = 80', "log_min_messages = 'warning'"];
  conf(primary.data, [`port = ${ports.primary}`, `unix_socket_directories = '${pDir}'`, ...common, `synchronous_standby_names = '${sync ? STANDBY_NAME : ''}'`]);
  writeFileSync(join(primary.data, 'pg_hba.conf'), ['local all all trust', 'host all all 127.0.0.1/32 trust', 'host replication all 127.0.0.1/32 trust', ''].join('\n'));
  primary.start();
  rmSync(standby.data, { recursive: true, force: true });
  asPg('pg_basebackup', ['-h', '127.0.0.1', '-p', String(ports.primary), '-U', 'postgres', '-D', standby.data, '-X', 'stream', '-R', '--no-sync']);
  // pg_basebackup -R wrote standby.signal and primary_conninfo; this node's own port, socket and name
  conf(
    standby.data,
    [
      `port = ${ports.standby}`,
      `unix_socket_directories = '${sDir}'`,
      `primary_conninfo = 'host=127.0.0.1 port=${ports.primary} user=postgres application_name=${STANDBY_NAME}'`,
      "synchronous_standby_names = ''",
    ],
    true,
  );
  standby.start();
  return {
    primary,
    standby,
    sync,
    hostListUrl: (db = 'postgres') => `postgres://postgres@127.0.0.1:${ports.standby},127.0.0.1:${ports.primary}/${db}?target_session_attrs=read-write`,
    stop() {
      standby.stop();
      primary.stop();
    },
  };
}

/** The pair as scripts/topology.ts left it (to stop it or report on it). */
export function existingPgPair(root: string, ports: { primary: number; standby: number }): Pick<PgPair, 'primary' | 'standby' | 'stop'> {
  const primary = node('primary', join(root, 'primary'), ports.primary);
  const standby = node('standby', join(root, 'standby'), ports.standby);
  return {
    primary,
    standby,
    stop() {
      standby.stop();
      primary.stop();
    },
  };
}
