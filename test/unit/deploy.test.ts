// docker-compose.yml, Dockerfile, .dockerignore and ops/prometheus.yml as a Docker user's tools
// read them (no Docker engine here): the compose-spec JSON schema (ajv), Debian's
// `docker-compose config`, `promtool check config`, and the properties a deployment needs.
// .ci/run installs docker-compose and prometheus; without them those checks print SKIPPED(…).
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { describeConfig } from '../../lib/core/config.ts';
import { FORCED_EXIT_MS } from '../../lib/runtime/process.ts';
import { parseProcfile, procfileArgs } from '../../scripts/start.ts';
import { PROMTOOL, shippedConfig } from '../support/prometheus.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const read = (f: string) => readFileSync(path.join(ROOT, f), 'utf8');
const COMPOSE_TEXT = read('docker-compose.yml');
const compose = parse(COMPOSE_TEXT, { merge: true }) as { services: Record<string, Service>; volumes: Record<string, unknown> };
const PROCS = parseProcfile(read('Procfile'));
const INFRA = ['postgres', 'mariadb', 'redis', 'kafka'];
/** Services that run once and exit 0: the migrations, the gateway's Kafka user. */
const ONE_SHOTS = ['migrate', 'kafka-users'];
const DOCKER_COMPOSE = process.env.DOCKER_COMPOSE_PATH ?? '/usr/bin/docker-compose';

interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  depends_on?: Record<string, { condition: string }> | string[];
  healthcheck?: { test: string[] };
  volumes?: string[];
  environment?: Record<string, string>;
  stop_grace_period?: string;
  restart?: string;
  user?: string;
}

const seconds = (d: string) => {
  const m = /^(\d+)(s|m)$/.exec(d);
  if (!m) throw new Error(`unexpected duration ${d}`);
  return Number(m[1]) * (m[2] === 'm' ? 60 : 1);
};
const defaultPort = (name: string) => Number(describeConfig().find((c) => c.key === `msgx.http.port.${name}`)!.default);

describe('docker-compose.yml', () => {
  it('is valid against the compose-spec JSON schema (copy shipped by dclint)', () => {
    const require = createRequire(import.meta.url);
    const schemaFile = path.join(path.dirname(require.resolve('dclint/package.json')), 'schemas/compose.schema.json');
    // draft-07 (ajv's default); its $schema spells the meta-schema with https, which ajv does not know by that name
    const { $schema, ...schema } = JSON.parse(readFileSync(schemaFile, 'utf8'));
    expect($schema).toMatch(/json-schema\.org\/draft-07\/schema/);
    const ajv = new Ajv({ allErrors: true, strict: false });
    const validate = ajv.compile(schema);
    const ok = validate(compose);
    expect(validate.errors ?? []).toEqual([]);
    expect(ok).toBe(true);
    // the schema really rejects a broken file (a healthcheck test must be a string or list)
    const broken = structuredClone(compose);
    (broken.services.pump.healthcheck as unknown) = { test: 42 };
    expect(validate(broken)).toBe(false);
  });

  it('runs exactly the Procfile processes, each with its Procfile command', () => {
    const apps = Object.keys(compose.services).filter((s) => ![...INFRA, ...ONE_SHOTS, 'prometheus'].includes(s));
    expect(apps.sort()).toEqual(PROCS.map((p) => p.name).sort());
    for (const p of PROCS) expect(compose.services[p.name].command!.join(' ')).toBe(p.command);
  });

  it("benches start a process with its Procfile line's node flags and entry file (procfileArgs)", () => {
    expect(procfileArgs('pump')).toEqual(['--max-semi-space-size=8', '--max-old-space-size=1536', 'workers/pump.ts']);
    expect(procfileArgs('intake')).toEqual(['workers/intake.ts']);
    expect(() => procfileArgs('nope')).toThrow('Procfile has no line "nope: node …"');
  });

  it('one image, built once (by migrate); every process and migrate run it', () => {
    const building = Object.entries(compose.services)
      .filter(([, s]) => s.build !== undefined)
      .map(([n]) => n);
    expect(building).toEqual(['migrate']);
    const image = compose.services.migrate.image;
    expect(image).toMatch(/^msgexchange:/);
    for (const p of PROCS) expect({ [p.name]: compose.services[p.name].image }).toEqual({ [p.name]: image });
  });

  it('start order: long-form depends_on with conditions; migrate is a one-shot the processes wait for', () => {
    for (const p of PROCS)
      expect({ [p.name]: compose.services[p.name].depends_on }).toEqual({
        [p.name]: {
          postgres: { condition: 'service_healthy' },
          mariadb: { condition: 'service_healthy' },
          redis: { condition: 'service_healthy' },
          kafka: { condition: 'service_healthy' },
          'kafka-users': { condition: 'service_completed_successfully' },
          migrate: { condition: 'service_completed_successfully' },
        },
      });
    // the gateway's SCRAM user on Kafka (docs/operations.md "Production settings"), once Kafka is healthy
    expect(compose.services['kafka-users'].depends_on).toEqual({ kafka: { condition: 'service_healthy' } });
    expect(compose.services['kafka-users'].restart).toBe('no');
    expect(compose.services.migrate.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    expect(compose.services.migrate.command).toEqual(['node', 'scripts/migrate.ts']);
    expect(compose.services.migrate.restart).toBe('no');
    for (const s of Object.values(compose.services)) expect(Array.isArray(s.depends_on)).toBe(false);
  });

  it('healthchecks: every long-running service; each process through its own /healthz', () => {
    for (const [name, s] of Object.entries(compose.services)) if (!ONE_SHOTS.includes(name)) expect({ name, hc: Boolean(s.healthcheck?.test) }).toEqual({ name, hc: true });
    for (const p of PROCS) expect(compose.services[p.name].healthcheck!.test).toEqual(['CMD', 'node', 'scripts/healthcheck.ts', p.name]);
  });

  it('state lives in named volumes declared at the top level', () => {
    const dataDirs: Record<string, string> = {
      postgres: '/var/lib/postgresql/data',
      mariadb: '/var/lib/mysql',
      redis: '/data',
      kafka: '/var/lib/kafka/data',
      prometheus: '/prometheus',
    };
    for (const [svc, dir] of Object.entries(dataDirs)) {
      const mount = compose.services[svc].volumes!.find((v) => v.split(':')[1] === dir);
      expect({ svc, mount }).toEqual({ svc, mount: expect.stringMatching(/^[a-z][a-z0-9-]*:/) });
      expect(Object.keys(compose.volumes)).toContain(mount!.split(':')[0]);
    }
    expect(compose.services.kafka.environment!.KAFKA_LOG_DIRS).toBe('/var/lib/kafka/data');
  });

  it('every connection is secured; every password and key is a secret file, none is in the file', () => {
    for (const p of PROCS) {
      expect(compose.services[p.name].environment).toMatchObject({
        DATABASE_TLS_MODE: 'verify-full',
        DATABASE_PASSWORD_FILE: '/run/secrets/postgres-password',
        INBOX_TLS_MODE: 'verify-full',
        INBOX_PASSWORD_FILE: '/run/secrets/inbox-password',
        REDIS_URL: expect.stringMatching(/^rediss:\/\//),
        REDIS_PASSWORD_FILE: '/run/secrets/redis-password',
        KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
        KAFKA_SASL_MECHANISM: 'scram-sha-512',
        KAFKA_SASL_PASSWORD_FILE: '/run/secrets/kafka-password',
      });
      for (const [k, v] of Object.entries(compose.services[p.name].environment!)) if (/_URL$/.test(k)) expect({ k, v }).toEqual({ k, v: expect.not.stringMatching(/\/\/[^@/]*:[^@/]*@/) });
    }
    expect(COMPOSE_TEXT).not.toMatch(/POSTGRES_PASSWORD:|MARIADB_ROOT_PASSWORD:|postgres:postgres@|root:root@/);
    expect(compose.services.mariadb.command).toContain('--require-secure-transport=ON');
    expect(compose.services.redis.command).toEqual(expect.arrayContaining(['--port', '0', '--tls-port', '--aclfile']));
    expect(compose.services.kafka.environment!.KAFKA_LISTENER_SECURITY_PROTOCOL_MAP).not.toMatch(/(INTERNAL|CLIENTS):PLAINTEXT/);
  });

  it('the api token is mandatory (:?), never defaulted; production mode', () => {
    expect(COMPOSE_TEXT).not.toMatch(/MSGX_API_TOKEN:-/);
    for (const p of PROCS) {
      expect(compose.services[p.name].environment!.MSGX_API_TOKEN).toMatch(/^\$\{MSGX_API_TOKEN:\?.+\}$/);
      expect(compose.services[p.name].environment!.MSGX_DEV_MODE).toBe('false');
    }
  });

  it('Kafka image is the locally verified version (scripts/kafka/pom.xml)', () => {
    const version = /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(read('scripts/kafka/pom.xml'))![1];
    expect(version).toBe('4.4.0');
    expect(compose.services.kafka.image).toBe(`apache/kafka:${version}`);
  });

  it("stop grace exceeds the processes' own forced exit", () => {
    for (const p of PROCS) expect(seconds(compose.services[p.name].stop_grace_period!) * 1000).toBeGreaterThan(FORCED_EXIT_MS);
  });

  it('Prometheus service runs the shipped ops/prometheus.yml and alert rules; the config scrapes every Procfile process', () => {
    const prom = compose.services.prometheus;
    expect(prom.volumes).toContain('./ops:/etc/prometheus:ro');
    expect(prom.command).toContain('--config.file=/etc/prometheus/prometheus.yml');
    const cfg = shippedConfig();
    expect(cfg.rule_files).toEqual(['prometheus-alerts.yml']);
    const targets = cfg.scrape_configs.flatMap((j) => j.static_configs.flatMap((s) => s.targets.map((t) => ({ job: j.job_name, target: t, process: s.labels?.process }))));
    expect(targets.sort((a, b) => a.target.localeCompare(b.target))).toEqual(
      PROCS.map((p) => ({ job: 'msgx', target: `${p.name}:${defaultPort(p.name)}`, process: p.name })).sort((a, b) => a.target.localeCompare(b.target)),
    );
    // MsgxProcessDown selects up{job=~"msgx.*"}
    expect(read('ops/prometheus-alerts.yml')).toContain('up{job=~"msgx.*"}');
  });

  it('ops/prometheus-local.yml (for `npm start`) is ops/prometheus.yml with 127.0.0.1 at each default port and the development token', () => {
    const compose = shippedConfig('prometheus.yml');
    const local = shippedConfig('prometheus-local.yml');
    for (const job of compose.scrape_configs) for (const s of job.static_configs) s.targets = s.targets.map((t) => `127.0.0.1:${defaultPort(t.split(':')[0])}`);
    // /metrics needs a viewer: a key from a secret file in compose, the token `dev` of development mode locally
    const auth = (c: typeof compose) => c.scrape_configs.map((j) => (j as { authorization?: unknown }).authorization);
    expect(auth(compose)).toEqual([{ type: 'Bearer', credentials_file: '/run/secrets/prometheus-api-key' }]);
    expect(auth(local)).toEqual([{ type: 'Bearer', credentials: 'dev' }]);
    for (const c of [compose, local]) for (const j of c.scrape_configs) delete (j as { authorization?: unknown }).authorization;
    expect(local).toEqual(compose);
  });
});

describe('Dockerfile and .dockerignore', () => {
  it('the image runs as a non-root user', () => {
    const users = read('Dockerfile')
      .split('\n')
      .filter((l) => /^USER\s/.test(l))
      .map((l) => l.split(/\s+/)[1]);
    expect(users.length).toBeGreaterThan(0);
    expect(users.at(-1)).not.toMatch(/^(root|0)(:|$)/);
    for (const s of Object.values(compose.services)) expect(s.user).toBeUndefined();
  });

  it('the build context leaves out node_modules, .git, local Kafka data and tests', () => {
    const lines = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    expect(lines[0]).toBe('*'); // allow-list: everything is out unless named
    const allowed = lines.filter((l) => l.startsWith('!')).map((l) => l.slice(1).replace(/\/$/, ''));
    for (const out of ['node_modules', '.git', '.local', 'test']) expect(allowed).not.toContain(out);
    // everything the Dockerfile copies is in the context
    const copied = read('Dockerfile')
      .split('\n')
      .filter((l) => l.startsWith('COPY '))
      .flatMap((l) => l.split(/\s+/).slice(1, -1));
    for (const c of copied) expect({ c, inContext: allowed.includes(c.replace(/\/$/, '')) }).toEqual({ c, inContext: true });
  });
});

const haveCompose = existsSync(DOCKER_COMPOSE);
if (!haveCompose) console.warn(`SKIPPED(no-docker-compose): ${DOCKER_COMPOSE} is absent; .ci/run installs Debian's docker-compose`);
describe.runIf(haveCompose)("Debian's docker-compose config", () => {
  const config = (env: Record<string, string | undefined>) =>
    spawnSync(DOCKER_COMPOSE, ['-f', 'docker-compose.yml', 'config'], { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, encoding: 'utf8' });

  it('accepts the file with a token and resolves it everywhere', () => {
    const r = config({ MSGX_API_TOKEN: 'a-real-secret' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const resolved = parse(r.stdout) as { services: Record<string, Service> };
    for (const p of PROCS) expect(resolved.services[p.name].environment!.MSGX_API_TOKEN).toBe('a-real-secret');
    expect(resolved.services.api.depends_on).toMatchObject({ migrate: { condition: 'service_completed_successfully' } });
  });

  it('refuses to render without MSGX_API_TOKEN, naming it', () => {
    const r = config({});
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/MSGX_API_TOKEN/);
  });
});

const havePromtool = existsSync(PROMTOOL);
if (!havePromtool) console.warn(`SKIPPED(no-promtool): ${PROMTOOL} is absent; .ci/run installs Debian's prometheus`);
describe.runIf(havePromtool)('promtool', () => {
  it.each(['ops/prometheus.yml', 'ops/prometheus-local.yml'])('checks %s and the alert rules it loads', (file) => {
    // compose mounts the scrape key at /run/secrets/prometheus-api-key: here a file of the test's own, beside a copy of the rules
    const dir = mkdtempSync(path.join(tmpdir(), 'msgx-promtool-'));
    writeFileSync(path.join(dir, 'prometheus-api-key'), 'msgxk_a-key-for-the-check', { mode: 0o600 });
    copyFileSync(path.join(ROOT, 'ops/prometheus-alerts.yml'), path.join(dir, 'prometheus-alerts.yml'));
    const config = path.join(dir, path.basename(file));
    writeFileSync(config, read(file).replace('/run/secrets/prometheus-api-key', path.join(dir, 'prometheus-api-key')));
    const r = spawnSync(PROMTOOL, ['check', 'config', config], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/SUCCESS: 1 rule files found/);
    expect(r.stdout).toMatch(/SUCCESS: \d+ rules found/);
  });
});
