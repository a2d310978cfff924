// Redis primary + replica watched by three Sentinels, of the project's own (docs/operations.md
// "Production topology"): redis-server processes on their own ports, state and logs under
// .local/; a Sentinel is `redis-server <conf> --sentinel`. The machine's Redis (6379) is never
// touched. Used by scripts/topology.ts and the drills.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const SENTINEL_MASTER = 'mymaster';
/** How long the Sentinels wait before they call the master down (a failover follows). */
export const DOWN_AFTER_MS = 2000;

export interface RedisPorts {
  primary: number;
  replica: number;
  sentinels: [number, number, number];
}

export interface RedisNode {
  port: number;
  running(): boolean;
  kill(): void;
  start(): void;
}

export interface RedisSentinelSet {
  primary: RedisNode;
  replica: RedisNode;
  sentinels: RedisNode[];
  /** REDIS_SENTINELS for the gateway. */
  sentinelList: string;
  /** The port the Sentinels name as the master now. */
  masterPort(): number;
  stop(): void;
}

function nodeOf(dir: string, name: string, port: number, conf: string[], sentinel = false): RedisNode {
  const pid = join(dir, `${name}.pid`);
  const file = join(dir, `${name}.conf`);
  return {
    port,
    running: () => existsSync(pid),
    kill() {
      if (!existsSync(pid)) return;
      try {
        process.kill(Number(readFileSync(pid, 'utf8').trim()), 'SIGKILL');
      } catch {
        // gone already
      }
      rmSync(pid, { force: true });
    },
    start() {
      if (!existsSync(file) || !readFileSync(file, 'utf8').includes(`port ${port}`)) writeFileSync(file, `${conf.join('\n')}\n`);
      execFileSync('redis-server', [file, ...(sentinel ? ['--sentinel'] : [])], { stdio: 'ignore' });
      const until = Date.now() + 10_000;
      while (Date.now() < until && !ping(port)) execFileSync('sleep', ['0.1']);
      if (!ping(port)) throw new Error(`redis ${name} on ${port} did not answer (log: ${join(dir, `${name}.log`)})`);
    },
  };
}

function ping(port: number): boolean {
  try {
    return execFileSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() === 'PONG';
  } catch {
    return false;
  }
}

function nodes(root: string, ports: RedisPorts) {
  const base = (name: string, port: number) => [
    `port ${port}`,
    'bind 127.0.0.1',
    'daemonize yes',
    `pidfile ${join(root, `${name}.pid`)}`,
    `logfile ${join(root, `${name}.log`)}`,
    `dir ${root}`,
    'save ""',
    'appendonly no',
  ];
  const primary = nodeOf(root, 'primary', ports.primary, base('primary', ports.primary));
  const replica = nodeOf(root, 'replica', ports.replica, [...base('replica', ports.replica), `replicaof 127.0.0.1 ${ports.primary}`]);
  const sentinels = ports.sentinels.map((p, i) =>
    nodeOf(
      root,
      `sentinel-${i + 1}`,
      p,
      [
        ...base(`sentinel-${i + 1}`, p).filter((l) => !l.startsWith('save') && !l.startsWith('appendonly')),
        `sentinel monitor ${SENTINEL_MASTER} 127.0.0.1 ${ports.primary} 2`,
        `sentinel down-after-milliseconds ${SENTINEL_MASTER} ${DOWN_AFTER_MS}`,
        `sentinel failover-timeout ${SENTINEL_MASTER} 10000`,
        `sentinel parallel-syncs ${SENTINEL_MASTER} 1`,
      ],
      true,
    ),
  );
  return { primary, replica, sentinels };
}

function setOf(ports: RedisPorts, n: ReturnType<typeof nodes>): RedisSentinelSet {
  return {
    ...n,
    sentinelList: ports.sentinels.map((p) => `127.0.0.1:${p}`).join(','),
    masterPort() {
      for (const s of n.sentinels) {
        try {
          const out = execFileSync('redis-cli', ['-p', String(s.port), 'sentinel', 'get-master-addr-by-name', SENTINEL_MASTER], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
          const port = Number(out.trim().split('\n')[1]);
          if (port) return port;
        } catch {
          // ask the next one
        }
      }
      return 0;
    },
    stop() {
      for (const x of [...n.sentinels, n.replica, n.primary]) x.kill();
    },
  };
}

/** A fresh set under root (emptied first). */
export function startRedisSentinels(root: string, ports: RedisPorts): RedisSentinelSet {
  rmSync(root, { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
  const n = nodes(root, ports);
  n.primary.start();
  n.replica.start();
  for (const s of n.sentinels) s.start();
  return setOf(ports, n);
}

/** The set scripts/topology.ts left under root (to stop it or report on it). */
export function existingRedisSentinels(root: string, ports: RedisPorts): RedisSentinelSet {
  return setOf(ports, nodes(root, ports));
}
