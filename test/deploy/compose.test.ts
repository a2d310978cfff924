// `npm run test:deploy`: docker-compose.yml run as its users run it (README "Deploy"), with
// Debian's docker-compose 1.29 against the Docker engine. The images under the names the file
// uses are the official ones where this machine has or can pull them, else stand-ins built from
// Debian's packages (test/deploy/images/). A project of its own (its containers, network and
// volumes, removed at the end), the api and Prometheus published on free loopback ports, the
// secrets in a folder of its own (MSGX_SECRETS_DIR), the image tagged msgexchange:deploy-test.
import { createHash } from 'node:crypto';
import { chownSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { freePort } from '../support/ports.ts';
import { dockerMissing, localCaCerts, ok, ROOT, run, waitFor } from './docker.ts';

const PROJECT = 'msgx-deploy-test';
/** Where docs/asyncapi.yaml's `compose` server says consumers read (SASL_SSL). */
const COMPOSE_KAFKA = (parse(readFileSync(join(ROOT, 'docs/asyncapi.yaml'), 'utf8')) as { servers: { compose: { host: string } } }).servers.compose.host;
const SECRETS = mkdtempSync(join(tmpdir(), 'msgx-deploy-secrets-'));
const WORK = mkdtempSync(join(tmpdir(), 'msgx-deploy-work-'));
const ONE_SHOTS = ['migrate', 'kafka-users'];
const READER_UID: Record<string, number> = { gateway: 1000, kafka: 1000, postgres: 999, mariadb: 999, redis: 999, prometheus: 65534 };
const times: Record<string, number> = {};
let apiPort = 0;
/** The state the last step before `stop` left: `down` and `up` must keep it. */
let kept = { states: '', version: undefined as unknown };
let promPort = 0;

const env = (): NodeJS.ProcessEnv => ({
  ...process.env,
  COMPOSE_PROJECT_NAME: PROJECT,
  MSGX_API_PORT: String(apiPort),
  MSGX_PROMETHEUS_PORT: String(promPort),
  MSGX_SECRETS_DIR: SECRETS,
  MSGX_IMAGE_TAG: 'deploy-test',
  MSGX_BUILD_CA_CERTS: localCaCerts(),
});
const dc = (args: string[], timeoutMs = 300_000) => run('docker-compose', ['-p', PROJECT, ...args], { env: env(), timeoutMs });
const dcOk = (args: string[], timeoutMs = 300_000) => ok('docker-compose', ['-p', PROJECT, ...args], { env: env(), timeoutMs });
const timed = async <T>(name: string, f: () => Promise<T>): Promise<T> => {
  const t0 = Date.now();
  try {
    return await f();
  } finally {
    times[name] = Math.round((Date.now() - t0) / 100) / 10;
  }
};

interface Container {
  id: string;
  service: string;
  status: string;
  health: string | undefined;
  exitCode: number;
}
async function containers(): Promise<Container[]> {
  const ids = (await ok('docker', ['ps', '-aq', '--filter', `label=com.docker.compose.project=${PROJECT}`])).split('\n').filter(Boolean);
  if (!ids.length) return [];
  const all = JSON.parse(await ok('docker', ['inspect', ...ids])) as {
    Id: string;
    Config: { Labels: Record<string, string> };
    State: { Status: string; ExitCode: number; Health?: { Status: string } };
  }[];
  return all.map((c) => ({ id: c.Id, service: c.Config.Labels['com.docker.compose.service'], status: c.State.Status, health: c.State.Health?.Status, exitCode: c.State.ExitCode }));
}
/** The images' anonymous volumes (VOLUME lines compose maps nowhere): `down` leaves them; afterAll removes them. */
const anonymous = new Set<string>();
async function noteAnonymousVolumes(): Promise<void> {
  const ids = (await ok('docker', ['ps', '-aq', '--filter', `label=com.docker.compose.project=${PROJECT}`])).split('\n').filter(Boolean);
  if (!ids.length) return;
  const all = JSON.parse(await ok('docker', ['inspect', ...ids])) as { Mounts: { Type: string; Name?: string }[] }[];
  for (const c of all) for (const m of c.Mounts) if (m.Type === 'volume' && m.Name && /^[0-9a-f]{64}$/.test(m.Name)) anonymous.add(m.Name);
}

/** Every long-running container healthy and the one-shots exited 0 (throws at once on a failed one-shot). */
async function allHealthy(): Promise<Container[] | undefined> {
  const cs = await containers();
  for (const c of cs)
    if (ONE_SHOTS.includes(c.service) && c.status === 'exited' && c.exitCode !== 0)
      throw new Error(`${c.service} exited ${c.exitCode}: ${(await run('docker', ['logs', '--tail', '20', c.id])).stderr}`);
  const unready = cs.filter((c) => (ONE_SHOTS.includes(c.service) ? c.status !== 'exited' : c.health !== 'healthy'));
  if (cs.length > 0 && unready.length > 0) throw new NotReady(unready);
  return cs.length > 0 ? cs : undefined;
}
/** The containers not ready yet (waitFor keeps the last one: a timeout names them). */
class NotReady extends Error {
  readonly unready: Container[];
  constructor(unready: Container[]) {
    super(`not ready: ${unready.map((c) => `${c.service} ${c.status}/${c.health ?? '-'}`).join(', ')}`);
    this.unready = unready;
  }
}
/** allHealthy within `timeoutMs`; a timeout says which containers were not ready, with the last lines each logged. */
async function waitHealthy(timeoutMs = 300_000): Promise<Container[]> {
  let last: NotReady | undefined;
  const probe = () =>
    allHealthy().catch((e: unknown) => {
      if (e instanceof NotReady) last = e;
      throw e;
    });
  try {
    return await waitFor('every healthcheck healthy, the one-shots exited 0', probe, timeoutMs, 2000);
  } catch (e) {
    const tails = await Promise.all(
      (last?.unready ?? []).map(
        async (c) => `--- ${c.service}\n${(await run('docker', ['logs', '--tail', '15', c.id])).stdout.slice(-2500)}${(await run('docker', ['logs', '--tail', '15', c.id])).stderr.slice(-2500)}`,
      ),
    );
    throw new Error(`${(e as Error).message}\n${tails.join('\n')}`);
  }
}

const operatorKey = () => readFileSync(join(SECRETS, 'operator-api-key'), 'utf8').trim();
async function flight(flid: string): Promise<Record<string, unknown>> {
  const r = await fetch(`http://127.0.0.1:${apiPort}/flights/${flid}`, { headers: { authorization: `Bearer ${operatorKey()}` }, signal: AbortSignal.timeout(5000) });
  if (r.status !== 200) throw new Error(`GET /flights/${flid}: ${r.status} ${await r.text()}`);
  return (await r.json()) as Record<string, unknown>;
}
/** SQL through the postgres container, as the runbook's compose column runs it. */
const psql = async (q: string) => (await dcOk(['exec', '-T', 'postgres', 'psql', '-U', 'msgx', 'msgx', '-XAtc', q], 60_000)).trim();
const states = () => psql("select state || ' ' || count(*) from proc_state group by state order by state");

/** Kafka's console consumer in a container of the kafka image on the project's network, SASL_SSL as the gateway's user. */
async function msgTopic(): Promise<{ key: string; eventId: number }[]> {
  const dir = join(WORK, 'consumer');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const props = join(dir, 'client.properties');
  const password = readFileSync(join(SECRETS, 'kafka/kafka-password'), 'utf8').trim();
  writeFileSync(
    props,
    `security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="msgx" password="${password}";\nssl.truststore.type=PEM\nssl.truststore.location=/etc/kafka/secrets/ca.pem\n`,
    { mode: 0o600 },
  );
  chownSync(props, 1000, 1000);
  const out = await ok(
    'docker',
    [
      'run',
      '--rm',
      '--network',
      `${PROJECT}_default`,
      '-v',
      `${props}:/etc/kafka/secrets/client.properties:ro`,
      '-v',
      `${join(SECRETS, 'kafka/ca.pem')}:/etc/kafka/secrets/ca.pem:ro`,
      'apache/kafka:4.4.0',
      '/opt/kafka/bin/kafka-console-consumer.sh',
      '--bootstrap-server',
      'kafka:9094',
      '--command-config',
      '/etc/kafka/secrets/client.properties',
      '--topic',
      'msgx.flight.msg',
      '--from-beginning',
      '--timeout-ms',
      '15000',
      '--formatter-property',
      'print.key=true',
    ],
    { timeoutMs: 120_000 },
  );
  return out
    .split('\n')
    .filter((l) => /^\d+\t\{/.test(l))
    .map((l) => {
      const [key, value] = l.split('\t');
      return { key, eventId: (JSON.parse(value) as { EVENT_ID: number }).EVENT_ID };
    });
}

/**
 * Per flight: the records' EVENT_IDs in topic order, a resent one (≤ the highest seen, seen
 * before: a round cut off by a kill is sent again) dropped; what is left must rise and be every
 * SENT msg event of the outbox. Returns the number of flights checked.
 */
async function noneLostOrReordered(): Promise<number> {
  const records = await msgTopic();
  const sent = await psql("select flid || ' ' || string_agg(event_id::text, ',' order by event_id) from msg_event where target = 'msg' and state = 'SENT' group by flid");
  const seen = new Map<string, number[]>();
  for (const r of records) {
    const list = seen.get(r.key) ?? [];
    const high = list.at(-1) ?? 0;
    if (r.eventId > high) list.push(r.eventId);
    else expect({ flid: r.key, resent: r.eventId, sentBefore: list.includes(r.eventId) }).toEqual({ flid: r.key, resent: r.eventId, sentBefore: true });
    seen.set(r.key, list);
  }
  const lines = sent.split('\n').filter(Boolean);
  for (const l of lines) {
    const [flid, ids] = l.split(' ');
    expect({ flid, onTopic: seen.get(flid) ?? [] }).toEqual({ flid, onTopic: ids.split(',').map(Number) });
  }
  return lines.length;
}

/** `count` gate changes alternating over flights 990001 and 990002, SEQN from `seqn`, gates `<prefix><i>`. */
function gateMessages(count: number, seqn: number, prefix: string): { flid: string; gate: string; xml: string }[] {
  return Array.from({ length: count }, (_, i) => {
    const flid = i % 2 ? '990002' : '990001';
    const ffid = flid === '990001' ? 'CA-CA1501-D-01DEC990930' : 'CA-CA1503-D-01DEC991100';
    const gate = `${prefix}${i}`;
    return {
      flid,
      gate,
      xml: `<?xml version="1.0" encoding="UTF-8"?>\n<MSG><META><SNDR>AODB</SNDR><SEQN>${seqn + i}</SEQN><DTTM>20991201070000</DTTM><TYPE>FLOP</TYPE><STYP>GTDT</STYP></META>\n<FLOP><FLID>${flid}</FLID><FFID>${ffid}</FFID><GTDT GTNO="1"><GATE>${gate}</GATE><GTYP>D</GTYP></GTDT></FLOP>\n</MSG>\n`,
    };
  });
}

/**
 * The messages into the inbox as an operator loads files in compose (`inject` in the api
 * container, docs/operations.md): copied in, then `chunks` inject runs a second apart. Resolves
 * when the last chunk is in.
 */
async function stream(name: string, messages: { xml: string }[], chunks: number): Promise<void> {
  const dir = join(WORK, name);
  const per = Math.ceil(messages.length / chunks);
  for (let c = 0; c < chunks; c++) {
    mkdirSync(join(dir, String(c).padStart(3, '0')), { recursive: true });
    messages.slice(c * per, (c + 1) * per).forEach((m, i) => writeFileSync(join(dir, String(c).padStart(3, '0'), `${String(i).padStart(4, '0')}.xml`), m.xml));
  }
  const api = (await containers()).find((c) => c.service === 'api')!.id;
  await ok('docker', ['cp', dir, `${api}:/tmp/${name}`]);
  await dcOk(['exec', '-T', 'api', 'sh', '-c', `for d in /tmp/${name}/*/; do node scripts/inject.ts "$d"*.xml >/dev/null || exit 1; sleep 1; done`], 300_000);
}

/**
 * `msgx_dispatch_sent_total{target="msg"}` of one msg-dispatch container (its /metrics, from
 * inside, as the operator: /metrics is a viewer read). The key goes in on standard input, never
 * on a command line; an answer other than 200 is no figure (undefined), not 0.
 */
async function sentBy(id: string): Promise<number | undefined> {
  const script = `fetch('http://127.0.0.1:9404/metrics', { headers: { authorization: 'Bearer ${operatorKey()}' } })
    .then(async (r) => { if (r.status !== 200) { console.error('metrics: ' + r.status); process.exit(1); } console.log(await r.text()); })`;
  const r = await run('docker', ['exec', '-i', id, 'node', '-'], { timeoutMs: 15_000, input: script });
  if (r.status !== 0) return undefined;
  const m = /^msgx_dispatch_sent_total\{target="msg"\} (\d+)/m.exec(r.stdout);
  return m ? Number(m[1]) : 0;
}

/** Every value of the secrets folder that is a secret: passwords, tokens, keys (not certificates, not key hashes). */
function secretValues(): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const f = join(d, e.name);
      if (e.isDirectory()) walk(f);
      else if (/password|token|api-key$/.test(e.name)) out.push(readFileSync(f, 'utf8').trim());
      else if (e.name.endsWith('.key'))
        out.push(
          ...readFileSync(f, 'utf8')
            .split('\n')
            .filter((l) => l.length >= 40 && !l.startsWith('-----')),
        );
    }
  };
  walk(SECRETS);
  return [...new Set(out)];
}

const missing = dockerMissing();
it('the Docker engine answers (.ci/run installs docker.io and starts dockerd)', () => expect(missing).toBeUndefined());
describe.skipIf(missing !== undefined)('docker-compose.yml, brought up as its users do', () => {
  beforeAll(async () => {
    apiPort = await freePort();
    promPort = await freePort();
    await dc(['down', '-v', '--remove-orphans'], 180_000); // what an interrupted earlier run left
    await timed('images', () => ok(join(ROOT, 'test/deploy/images/build.sh'), [], { timeoutMs: 40 * 60_000 }));
  }, 45 * 60_000);

  afterAll(async () => {
    await noteAnonymousVolumes().catch(() => {});
    await dc(['down', '-v', '--remove-orphans'], 300_000);
    if (anonymous.size) await run('docker', ['volume', 'rm', ...anonymous]);
    rmSync(SECRETS, { recursive: true, force: true });
    rmSync(WORK, { recursive: true, force: true });
    console.log(`[deploy] seconds per step: ${JSON.stringify(times)}`);
  }, 360_000);

  it('scripts/deploy-secrets: the folder 700, every file 600, each folder owned by the container user that reads it; the CA key mounted nowhere', async () => {
    await ok(join(ROOT, 'scripts/deploy-secrets'), [], { env: env() });
    const seen: string[] = [];
    const walk = (d: string) => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        const f = join(d, e.name);
        const st = statSync(f);
        const reader = relative(SECRETS, f).split('/')[0];
        const want = e.isDirectory() || reader === e.name ? 0 : (READER_UID[reader] ?? 0);
        seen.push(relative(SECRETS, f));
        expect({ f: relative(SECRETS, f), mode: (st.mode & 0o777).toString(8), uid: st.uid }).toEqual({
          f: relative(SECRETS, f),
          mode: e.isDirectory() ? '700' : '600',
          uid: e.isDirectory() ? (READER_UID[e.name] ?? 0) : want,
        });
        if (e.isDirectory()) walk(f);
      }
    };
    expect((statSync(SECRETS).mode & 0o777).toString(8)).toBe('700');
    walk(SECRETS);
    expect(seen).toEqual(expect.arrayContaining(['ca.key', 'operator-api-key', 'gateway/api-keys', 'prometheus/prometheus-api-key', 'kafka/kafka.p12']));
    // what compose mounts: files of the reader folders only, never the CA's key or the operators' key, never a folder
    const config = parse(await dcOk(['config'])) as { secrets: Record<string, { file: string }>; services: Record<string, { volumes?: (string | { source?: string })[] }> };
    const files = Object.values(config.secrets).map((s) => relative(SECRETS, s.file));
    expect(files.filter((f) => !/^(gateway|postgres|mariadb|redis|kafka|prometheus)\/[^/]+$/.test(f))).toEqual([]);
    for (const s of Object.values(config.services)) for (const v of s.volumes ?? []) expect(String(typeof v === 'string' ? v : v.source)).not.toContain(SECRETS);
    // the api keys file holds the sha256 of each key, named and with its role
    const keys = readFileSync(join(SECRETS, 'gateway/api-keys'), 'utf8');
    // keys in the api's own format (its prefix, 32 random bytes base64url), or the api takes them for JWTs
    for (const k of [operatorKey(), readFileSync(join(SECRETS, 'prometheus/prometheus-api-key'), 'utf8').trim()]) expect(k).toMatch(/^msgxk_[A-Za-z0-9_-]{43}$/);
    const sha = (s: string) => createHash('sha256').update(s).digest('hex');
    expect(keys).toBe(`operator operator ${sha(operatorKey())}\nprometheus viewer ${sha(readFileSync(join(SECRETS, 'prometheus/prometheus-api-key'), 'utf8').trim())}\n`);
  }, 60_000);

  it(
    'up -d --build: every healthcheck healthy, migrate and kafka-users exited 0',
    async () => {
      await timed('up --build', async () => {
        await dcOk(['up', '-d', '--build'], 30 * 60_000);
        await waitHealthy();
      });
      const cs = await containers();
      expect(
        cs
          .filter((c) => ONE_SHOTS.includes(c.service))
          .map((c) => [c.service, c.exitCode])
          .sort(),
      ).toEqual([
        ['kafka-users', 0],
        ['migrate', 0],
      ]);
      expect(cs.filter((c) => !ONE_SHOTS.includes(c.service)).length).toBe(13); // 5 servers, 8 processes
      // what README tells an operator to look at: `ps -a`, every row "Up (healthy)" or "Exit 0"
      const rows = (await dcOk(['ps', '-a'])).split('\n').filter((l) => l.startsWith(`${PROJECT}_`));
      expect(rows.length).toBe(15);
      expect(rows.filter((l) => !/ (Up \(healthy\)|Exit 0) /.test(l))).toEqual([]);
      // published: the api and Prometheus on the loopback, nothing else
      const ports = await ok('docker', ['ps', '--filter', `label=com.docker.compose.project=${PROJECT}`, '--format', '{{.Ports}}']);
      expect(ports.match(/[\d.]+:\d+->\d+\/tcp/g)?.sort()).toEqual([`127.0.0.1:${apiPort}->8080/tcp`, `127.0.0.1:${promPort}->9090/tcp`].sort());
    },
    35 * 60_000,
  );

  it('the sample set, loaded as the docs show (inject in the api container), ends as README says; flight 990001 through the published port; Prometheus scrapes every process', async () => {
    const out = await dcOk(['exec', '-T', 'api', 'sh', '-c', 'node scripts/inject.ts --renumber-seqn examples/sample/*.xml']);
    expect(out).toMatch(/inserted 7 rows/);
    await timed('sample applied', () => waitFor('the sample terminal', async () => (await states()) === 'DEAD 1\nSKIPPED 1\nSUCCEEDED 5' || undefined, 60_000));
    const f = await flight('990001');
    expect(f).toMatchObject({ FLID: '990001', STATE: 'ACTIVE' });
    expect(JSON.stringify(f)).toContain('"G12"');
    await waitFor(
      'Prometheus scrapes all eight processes',
      async () => {
        const r = (await (await fetch(`http://127.0.0.1:${promPort}/api/v1/query?query=up`, { signal: AbortSignal.timeout(5000) })).json()) as { data: { result: { value: [number, string] }[] } };
        return r.data.result.length === 8 && r.data.result.every((x) => x.value[1] === '1');
      },
      60_000,
    );
  }, 180_000);

  it("the msg topic, read over SASL_SSL at AsyncAPI's compose server (kafka:9094) with Kafka's console consumer as the gateway's user", async () => {
    expect(COMPOSE_KAFKA).toBe('kafka:9094');
    const flights = await timed('console consumer', () => noneLostOrReordered());
    expect(flights).toBe(3);
  }, 180_000);

  it('--scale msg-dispatch=2: the sending container killed, the other sends within 10 s; nothing lost or reordered per flight', async () => {
    await dcOk(['up', '-d', '--no-recreate', '--scale', 'msg-dispatch=2']);
    await waitHealthy(120_000);
    const dispatchers = (await containers()).filter((c) => c.service === 'msg-dispatch').map((c) => c.id);
    expect(dispatchers.length).toBe(2);
    const messages = gateMessages(240, 500_000, 'S');
    const flowing = stream('scale', messages, 24);
    flowing.catch(() => undefined); // awaited below; a failure before that waits for it, so the next test starts on a quiet stream
    let killedAt = 0;
    try {
      // the sender: the one whose count rises while the stream flows
      const sender = await waitFor(
        'a msg-dispatch sends',
        async () => {
          const before = await Promise.all(dispatchers.map(sentBy));
          await new Promise((r) => setTimeout(r, 1500));
          const after = await Promise.all(dispatchers.map(sentBy));
          const rise = after.map((a, i) => (a ?? 0) - (before[i] ?? 0));
          return Math.max(...rise) > 0 ? dispatchers[rise.indexOf(Math.max(...rise))] : undefined;
        },
        60_000,
        0,
      );
      const other = dispatchers.find((d) => d !== sender)!;
      const otherAtKill = (await sentBy(other)) ?? 0;
      // a crash: the node process SIGKILLed inside (docker kill would count as a stop: no restart)
      await ok('docker', ['exec', '-u', 'root', sender, 'sh', '-c', 'for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = node ] && kill -KILL "$(basename "$p")"; done; true']);
      killedAt = Date.now();
      try {
        await waitFor('the other msg-dispatch sends', async () => ((await sentBy(other)) ?? 0) > otherAtKill, 10_000, 250);
      } catch (e) {
        // what each instance sent, and what waits: tells a slow takeover from a stream that ended
        const sent = await Promise.all(dispatchers.map(async (d) => `${d === sender ? 'killed' : 'other'} ${await sentBy(d)}`));
        const waiting = await psql("select count(*) from msg_event where target = 'msg' and state = 'PENDING'");
        throw new Error(`${(e as Error).message}; sent since start: ${sent.join(', ')} (other at the kill: ${otherAtKill}); msg events PENDING: ${waiting}`);
      }
    } catch (e) {
      await flowing.catch(() => undefined);
      throw e;
    }
    times['takeover (s)'] = (Date.now() - killedAt) / 1000;
    await flowing;
    await waitFor(
      'every stream message terminal and every msg event sent',
      async () =>
        (await psql("select count(*) from proc_state where state not in ('SUCCEEDED','SKIPPED','DEAD')")) === '0' &&
        (await psql("select count(*) from msg_event where target = 'msg' and state <> 'SENT'")) === '0',
      120_000,
    );
    expect(await psql('select count(*) from proc_state where msg_id > 7 and state <> $$SUCCEEDED$$')).toBe('0');
    expect(await noneLostOrReordered()).toBe(3);
    await waitHealthy(120_000); // the killed one restarted (restart: unless-stopped)
  }, 600_000);

  it('the pump restarted mid-stream: the end state is that of a run without the restart', async () => {
    const before = { '990001': Number((await flight('990001')).STATE_VERSION), '990002': Number((await flight('990002')).STATE_VERSION) };
    const firstId = Number(await psql('select coalesce(max(msg_id), 0) + 1 from proc_state'));
    const messages = gateMessages(120, 600_000, 'R');
    const flowing = stream('restart', messages, 12);
    await waitFor('the pump applies part of the stream', async () => Number(await psql(`select count(*) from proc_state where msg_id >= ${firstId} and state = 'SUCCEEDED'`)) > 10, 60_000, 250);
    await timed('pump restart', () => dcOk(['restart', 'pump'], 120_000));
    await flowing;
    await waitFor(
      'every stream message terminal',
      async () => (await psql(`select count(*) from proc_state where msg_id >= ${firstId} and state in ('SUCCEEDED','SKIPPED','DEAD')`)) === String(messages.length),
      180_000,
    );
    // a run without the restart: every message applied once, in order; each flight one version per message and the last gate
    expect(await psql(`select state || ' ' || count(*) from proc_state where msg_id >= ${firstId} group by state`)).toBe(`SUCCEEDED ${messages.length}`);
    for (const flid of ['990001', '990002'] as const) {
      const mine = messages.filter((m) => m.flid === flid);
      const f = await flight(flid);
      expect({ flid, version: f.STATE_VERSION, lastGate: JSON.stringify(f).includes(`"${mine.at(-1)!.gate}"`) }).toEqual({ flid, version: before[flid] + mine.length, lastGate: true });
      expect(await psql(`select count(*) from msg_event where target = 'msg' and flid = '${flid}' and state_version > ${before[flid]}`)).toBe(String(mine.length));
    }
    // backfill wrote every processing time back into the inbox
    await waitFor(
      'backfill done',
      async () =>
        (
          await dcOk([
            'exec',
            '-T',
            'mariadb',
            'sh',
            '-c',
            'MYSQL_PWD="$(cat /run/secrets/mariadb-root-password)" mariadb -uroot -N -B aodbinterface -e "select count(*) from cminmsgs where CMINMSGS_DATE_PROCESSED is null"',
          ])
        ).trim() === '0',
      60_000,
    );
    expect(await noneLostOrReordered()).toBe(3);
    kept = { states: await states(), version: (await flight('990001')).STATE_VERSION };
  }, 600_000);

  it('stop: every container exits 0 within its grace period (a SIGKILL after it would be 137)', async () => {
    await timed('stop', () => dcOk(['stop'], 300_000));
    const cs = await containers();
    expect(cs.filter((c) => c.status !== 'exited')).toEqual([]);
    expect(cs.filter((c) => c.exitCode !== 0).map((c) => `${c.service} ${c.exitCode}`)).toEqual([]);
  }, 360_000);

  it('docker-compose logs hold no secret', async () => {
    const logs = (await dcOk(['logs', '--no-color'], 120_000)).toString();
    expect(logs.length).toBeGreaterThan(10_000);
    const secrets = secretValues();
    expect(secrets.length).toBeGreaterThan(10);
    expect(secrets.filter((s) => logs.includes(s))).toEqual([]);
  }, 180_000);

  it('down, then up (volumes kept): the data is still there', async () => {
    expect(kept.states).toMatch(/SUCCEEDED/);
    await timed('down + up', async () => {
      await noteAnonymousVolumes();
      await dcOk(['down'], 300_000);
      await dcOk(['up', '-d'], 600_000);
      await waitHealthy();
    });
    expect({ states: await states(), version: (await flight('990001')).STATE_VERSION }).toEqual(kept);
    expect(await noneLostOrReordered()).toBe(3);
  }, 900_000);
});
