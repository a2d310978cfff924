// A three-broker KRaft Kafka cluster of the project's own (docs/operations.md "Production
// topology"): the same Maven jars as the single-node broker (the classpath scripts/services
// caches), each node broker + controller with its own ports, state and log under .local/.
// The single-node broker (9092) is never touched. Used by scripts/topology.ts and the drills.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import kafkajs from '../../lib/db/kafkajs.ts';

const CLUSTER_ID = 'TXNneFRvcG9sb2d5MDAwMQ';
const JVM = ['-Xmx320m', '-Xms64m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1'];

export interface KafkaPorts {
  /** Client port of each broker; the controller listens on the port + 100. */
  brokers: [number, number, number];
}

export interface KafkaNode {
  id: number;
  port: number;
  running(): boolean;
  /** SIGKILL the JVM. */
  kill(): void;
  /** SIGTERM (a controlled shutdown), SIGKILL if still running after 60 s. */
  stop(): Promise<void>;
  start(): void;
}

export interface KafkaCluster {
  nodes: KafkaNode[];
  /** KAFKA_BROKERS for the gateway. */
  brokers: string;
  stop(): void;
}

const classpath = () => readFileSync(process.env.KAFKA_CLASSPATH_FILE ?? resolve('.local/kafka/classpath.txt'), 'utf8').trim();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function nodesOf(root: string, ports: KafkaPorts): KafkaNode[] {
  const voters = ports.brokers.map((p, i) => `${i + 1}@127.0.0.1:${p + 100}`).join(',');
  return ports.brokers.map((port, i) => {
    const id = i + 1;
    const dir = join(root, `node-${id}`);
    const config = join(dir, 'server.properties');
    const pidFile = join(dir, 'kafka.pid');
    const pid = () => (existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) : 0);
    const props = [
      'process.roles=broker,controller',
      `node.id=${id}`,
      `controller.quorum.voters=${voters}`,
      `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${port + 100}`,
      `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
      'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
      'inter.broker.listener.name=PLAINTEXT',
      'controller.listener.names=CONTROLLER',
      `log.dirs=${join(dir, 'data')}`,
      'num.partitions=1',
      'default.replication.factor=3',
      'min.insync.replicas=2',
      'offsets.topic.replication.factor=3',
      'transaction.state.log.replication.factor=3',
      'transaction.state.log.min.isr=2',
      'group.initial.rebalance.delay.ms=0',
      'auto.create.topics.enable=false',
      'unclean.leader.election.enable=false',
      '',
    ].join('\n');
    return {
      id,
      port,
      running: () => pid() > 0 && alive(pid()),
      kill() {
        const p = pid();
        if (p && alive(p)) process.kill(p, 'SIGKILL');
        rmSync(pidFile, { force: true });
      },
      async stop() {
        const p = pid();
        if (!p || !alive(p)) return;
        process.kill(p, 'SIGTERM');
        for (let waited = 0; alive(p) && waited < 60_000; waited += 250) await new Promise((r) => setTimeout(r, 250));
        this.kill();
      },
      start() {
        if (!existsSync(config)) {
          mkdirSync(dir, { recursive: true });
          writeFileSync(config, props);
          execFileSync('java', [...JVM, '-cp', classpath(), 'kafka.tools.StorageTool', 'format', '-t', CLUSTER_ID, '-c', config], { stdio: ['ignore', 'pipe', 'pipe'] });
        }
        const out = openSync(join(dir, 'server.log'), 'a');
        const child = spawn('java', [...JVM, '-cp', classpath(), 'kafka.Kafka', config], { stdio: ['ignore', out, out], detached: true });
        child.unref();
        writeFileSync(pidFile, String(child.pid));
      },
    };
  });
}

/** A fresh cluster under root (emptied first); the caller waits until it answers. */
export function startKafkaCluster(root: string, ports: KafkaPorts): KafkaCluster {
  rmSync(root, { recursive: true, force: true });
  const nodes = nodesOf(root, ports);
  for (const n of nodes) n.start();
  return clusterOf(nodes);
}

/** The cluster scripts/topology.ts left under root. */
export function existingKafkaCluster(root: string, ports: KafkaPorts): KafkaCluster {
  return clusterOf(nodesOf(root, ports));
}

function clusterOf(nodes: KafkaNode[]): KafkaCluster {
  return {
    nodes,
    brokers: nodes.map((n) => `127.0.0.1:${n.port}`).join(','),
    stop() {
      for (const n of nodes) n.kill();
    },
  };
}

/** Partitions each broker leads over the topics. */
export async function leaderCounts(admin: kafkajs.Admin, topics: string[]): Promise<Map<number, number>> {
  const leads = new Map<number, number>();
  for (const t of (await admin.fetchTopicMetadata({ topics })).topics) for (const p of t.partitions) leads.set(p.leader, (leads.get(p.leader) ?? 0) + 1);
  return leads;
}

/** Every replica of every partition of the topics in sync (a restarted broker caught up). */
export async function allInSync(admin: kafkajs.Admin, topics: string[]): Promise<boolean> {
  return (await admin.fetchTopicMetadata({ topics })).topics.every((t) => t.partitions.every((p) => p.isr.length === p.replicas.length));
}

/** Each node answers a metadata request itself and sees three brokers (a survivor's metadata may still list dead ones). */
export async function nodesAnswering(nodes: KafkaNode[]): Promise<boolean> {
  const admins = nodes.map((n) => new kafkajs.Kafka({ clientId: 'topology-check', brokers: [`127.0.0.1:${n.port}`], logLevel: kafkajs.logLevel.NOTHING, retry: { retries: 0 } }).admin());
  try {
    return (await Promise.all(admins.map(async (a) => (await a.connect(), (await a.describeCluster()).brokers.length === 3)))).every(Boolean);
  } finally {
    await Promise.all(admins.map((a) => a.disconnect().catch(() => {})));
  }
}
