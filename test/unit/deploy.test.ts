// docker-compose.yml, Dockerfile, .dockerignore, scripts/deploy-secrets and ops/prometheus.yml as a
// Docker user's tools read them: the compose-spec JSON schema (ajv), Debian's `docker-compose
// config`, `promtool check config`, and the properties a deployment needs (its secrets and what
// it exposes among them). `npm run test:deploy` runs the file (test/deploy/compose.test.ts).
// .ci/run installs docker-compose and prometheus; without them those checks print SKIPPED(…).
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
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
  entrypoint?: string[];
  secrets?: { source: string; target: string }[];
  ports?: string[];
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

  it('the api keys reach the processes as a file, no shared token; production mode; the Host allowlist names every process', () => {
    // the shared token is for development mode on loopback only: no process of the deployment has it
    expect(COMPOSE_TEXT).not.toMatch(/MSGX_API_TOKEN/);
    for (const p of PROCS) {
      expect(compose.services[p.name].environment).toMatchObject({
        MSGX_API_KEYS_FILE: '/run/secrets/api-keys',
        MSGX_DEV_MODE: 'false',
      });
      expect(compose.services[p.name].environment!.MSGX_HTTP_ALLOWED_HOSTS.split(',').sort()).toEqual(PROCS.map((x) => x.name).sort());
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

/** The secret files a service's own settings name: /run/secrets/… and /etc/kafka/secrets/… paths, Kafka's SSL file names. */
function referencedSecrets(name: string, s: Service): string[] {
  const { secrets: _, ...rest } = s;
  const text = JSON.stringify(rest);
  const paths = [...text.matchAll(/\/(?:run|etc\/kafka)\/secrets\/[\w.-]+/g)].map((m) => m[0]);
  for (const [k, v] of Object.entries(s.environment ?? {})) if (/^KAFKA_SSL_\w+_(FILENAME|CREDENTIALS)$/.test(k)) paths.push(`/etc/kafka/secrets/${v}`);
  // files that name others: kafka-admin.properties its trust store (scripts/deploy-secrets writes it so);
  // ops/prometheus.yml (mounted as Prometheus's configuration) scrapes /metrics with the viewer key
  if (paths.includes('/etc/kafka/secrets/kafka-admin.properties')) paths.push('/etc/kafka/secrets/ca.pem');
  if (name === 'prometheus') paths.push('/run/secrets/prometheus-api-key');
  return [...new Set(paths)].sort();
}
const mounted = (s: Service) => (s.secrets ?? []).map((x) => (x.target.startsWith('/') ? x.target : `/run/secrets/${x.target}`)).sort();
/** deploy/secrets/<reader>/: the folder whose files the service's image user owns (scripts/deploy-secrets). */
const READER: Record<string, string> = { postgres: 'postgres', mariadb: 'mariadb', redis: 'redis', kafka: 'kafka', 'kafka-users': 'kafka', prometheus: 'prometheus' };
const SECRET_FILE = /^\$\{MSGX_SECRETS_DIR:-\.\/deploy\/secrets\}\/(\w+)\/([\w.-]+)$/;

describe('secrets and exposure (docker-compose.yml)', () => {
  const top = (parse(COMPOSE_TEXT, { merge: true }) as { secrets: Record<string, { file: string }> }).secrets;

  it('each container mounts exactly the secrets its settings name, nothing else', () => {
    for (const [name, s] of Object.entries(compose.services)) expect({ name, mounted: mounted(s) }).toEqual({ name, mounted: referencedSecrets(name, s) });
  });

  it("every secret is a file of deploy/secrets/<reader>/ for the reader's own folder; no folder is mounted; the CA key and the operators' key are mounted nowhere", () => {
    for (const [name, f] of Object.entries(top)) {
      const m = SECRET_FILE.exec(f.file);
      expect({ name, file: f.file, ok: Boolean(m) }).toEqual({ name, file: f.file, ok: true });
      expect(name).toBe(`${m![1]}-${m![2]}`);
      expect(m![2]).not.toMatch(/^(ca\.key|operator-api-key)$/);
    }
    for (const [name, s] of Object.entries(compose.services)) {
      for (const v of s.volumes ?? []) expect(v).not.toMatch(/secrets/);
      const reader = READER[name] ?? 'gateway';
      for (const x of s.secrets ?? []) expect({ name, folder: SECRET_FILE.exec(top[x.source].file)![1] }).toEqual({ name, folder: reader });
    }
  });

  it("the Kafka SCRAM password never reaches a command line: kafka-users reads it into a tmpfs file (bash's own $(<…)) for --add-config-file", () => {
    const users = compose.services['kafka-users'].command!.join(' ');
    expect(users).toContain('--add-config-file /tmp/scram.properties');
    expect(users).toContain('"$$(</etc/kafka/secrets/kafka-password)"');
    expect(users).not.toMatch(/--add-config\s/);
    expect((compose.services['kafka-users'] as { tmpfs?: string[] }).tmpfs).toEqual(['/tmp']);
    // no secret file's content substituted into an argument anywhere (an environment assignment,
    // VAR="$(cat f)", and bash's builtin printf are no command line)
    for (const [name, s] of Object.entries(compose.services))
      for (const part of [s.command, s.entrypoint, s.healthcheck?.test].flat().filter(Boolean) as string[])
        expect({ name, part: part.replace(/[A-Z_]+="\$\$\(cat [^)]+\)"|printf '[^']*' "\$\$\(<[^)]+\)"/g, '') }).toEqual({ name, part: expect.not.stringMatching(/\$\$?\((cat|<)[^)]*secrets/) });
  });

  it('published: the api and Prometheus only, on the loopback; Prometheus without --web.enable-lifecycle', () => {
    const published = Object.entries(compose.services).filter(([, s]) => s.ports?.length);
    expect(published.map(([n]) => n).sort()).toEqual(['api', 'prometheus']);
    for (const [, s] of published) for (const p of s.ports!) expect(p).toMatch(/^127\.0\.0\.1:\$\{MSGX_(API|PROMETHEUS)_PORT:-\d+\}:\d+$/);
    expect(compose.services.prometheus.command!.join(' ')).not.toContain('lifecycle');
  });

  const keytool = spawnSync('keytool', ['-help'], { encoding: 'utf8' }).status === 0;
  const root = process.getuid?.() === 0;
  if (!keytool || !root) console.warn(`SKIPPED(deploy-secrets-run): ${!root ? "not root (it gives files to the containers' users)" : 'no keytool (a JDK)'}`);
  it.runIf(keytool && root)('scripts/deploy-secrets: the folder 700, every file 600, each reader folder owned by its container user', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'msgx-secrets-'));
    try {
      const r = spawnSync(path.join(ROOT, 'scripts/deploy-secrets'), [], { env: { ...process.env, MSGX_SECRETS_DIR: dir }, encoding: 'utf8', timeout: 60_000 });
      expect(r.status, r.stderr).toBe(0);
      const uid: Record<string, number> = { gateway: 1000, kafka: 1000, postgres: 999, mariadb: 999, redis: 999, prometheus: 65534 };
      const files: string[] = [];
      for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
        const f = path.join(e.parentPath, e.name);
        const rel = path.relative(dir, f);
        const st = statSync(f);
        files.push(rel);
        expect({ rel, mode: (st.mode & 0o777).toString(8), uid: st.uid }).toEqual({ rel, mode: e.isDirectory() ? '700' : '600', uid: uid[rel.split('/')[0]] ?? 0 });
      }
      expect((statSync(dir).mode & 0o777).toString(8)).toBe('700');
      // every file compose names is made, and the two never mounted are outside the reader folders
      for (const f of Object.values(top)) expect(files).toContain(SECRET_FILE.exec(f.file)!.slice(1, 3).join('/'));
      expect(files).toEqual(expect.arrayContaining(['ca.key', 'operator-api-key']));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the stand-in images (test/deploy/images/build.sh)', () => {
  it('stand in under exactly the names docker-compose.yml and the Dockerfile use', () => {
    const tags = [...read('test/deploy/images/build.sh').matchAll(/\[([a-z]+)\]=([\w./:-]+)/g)].map((m) => m[2]).sort();
    const used = [...new Set([...Object.values(compose.services).map((s) => s.image!), /^FROM (\S+)/m.exec(read('Dockerfile'))![1]])].filter((i) => !i.startsWith('msgexchange:')).sort();
    expect(tags).toEqual(used);
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

  it('accepts the file with no variable set; the ports and the secrets folder substitute', () => {
    const plain = config({});
    expect(plain.stderr).toBe('');
    expect(plain.status).toBe(0);
    const resolved = parse(plain.stdout) as { services: Record<string, Service>; secrets: Record<string, { file: string }> };
    expect(resolved.services.api.ports).toEqual(['127.0.0.1:8080:8080/tcp']);
    expect(resolved.services.api.depends_on).toMatchObject({ migrate: { condition: 'service_completed_successfully' } });
    expect(resolved.secrets['gateway-api-keys'].file).toBe(path.join(ROOT, 'deploy/secrets/gateway/api-keys'));
    const moved = parse(config({ MSGX_API_PORT: '18080', MSGX_SECRETS_DIR: '/srv/secrets' }).stdout) as typeof resolved;
    expect(moved.services.api.ports).toEqual(['127.0.0.1:18080:8080/tcp']);
    expect(moved.secrets['gateway-api-keys'].file).toBe('/srv/secrets/gateway/api-keys');
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
