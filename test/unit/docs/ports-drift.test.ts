// Drift: what the documents say compose publishes is what docker-compose.yml publishes. README
// "Deploy" lists each published service with its port variable and default; docs/operations.md
// says which of the container ports are reachable from the host. A port published in the file and
// not named, or named and not published, fails; so does a published port not bound to 127.0.0.1.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const read = (f: string) => readFileSync(path.join(ROOT, f), 'utf8');
/** A compose port entry as the file writes it: 127.0.0.1:${VAR:-port}:port. */
const entry = (host: string, variable: string, port: number) => `${host}:$\{${variable}:-${port}}:${port}`;

interface Published {
  service: string;
  host: string;
  variable: string;
  port: number;
}

/** Every `ports:` entry of the compose file, as written: "127.0.0.1:${VAR:-8080}:8080". */
function published(compose: string): Published[] {
  const doc = parse(compose) as { services: Record<string, { ports?: string[] }> };
  return Object.entries(doc.services).flatMap(([service, s]) =>
    (s.ports ?? []).map((p) => {
      const m = /^([^:]+):\$\{(\w+):-(\d+)\}:(\d+)$/.exec(p);
      if (!m) return { service, host: p, variable: '', port: Number.NaN };
      return { service, host: m[1], variable: m[2], port: Number(m[3]) };
    }),
  );
}

/** The differences between the compose file's published ports and what README and operations.md say. */
function portDrift(compose: string, readme: string, operations: string): string[] {
  const out: string[] = [];
  const ports = published(compose);
  const readmeLine = /Published on 127\.0\.0\.1 only: ([^;]+);/.exec(readme.replace(/\n/g, ' '))?.[1] ?? '';
  const opsLine = /only (.+?) are published/.exec(operations)?.[1] ?? '';
  for (const p of ports) {
    if (p.host !== '127.0.0.1' || !p.variable) out.push(`${p.service}: published as ${p.host}, not 127.0.0.1:$\{VAR:-port}`);
    if (!readmeLine.includes(`\`${p.variable}\`, ${p.port}`)) out.push(`README "Deploy" does not name ${p.service}'s ${p.variable} (${p.port})`);
    if (!opsLine.includes(String(p.port))) out.push(`docs/operations.md does not name ${p.port} (${p.service}) among the published ports`);
  }
  for (const n of readmeLine.match(/\b\d{4,5}\b/g) ?? []) if (!ports.some((p) => p.port === Number(n))) out.push(`README "Deploy" names ${n}, which compose does not publish`);
  for (const n of opsLine.match(/\b\d{4,5}\b/g) ?? []) if (!ports.some((p) => p.port === Number(n))) out.push(`docs/operations.md names ${n}, which compose does not publish`);
  return out;
}

describe('published ports: docker-compose.yml vs README and docs/operations.md', () => {
  const compose = read('docker-compose.yml');
  const readme = read('README.md');
  const operations = read('docs/operations.md');

  it('the documents name exactly the ports compose publishes, each on loopback', () => {
    expect(published(compose).length).toBeGreaterThan(0);
    expect(portDrift(compose, readme, operations)).toEqual([]);
  });

  it('reports a port published and not documented, and one documented and not published', () => {
    const more = compose.replace('services:\n', `services:\n  extra:\n    image: x\n    ports: ["${entry('127.0.0.1', 'MSGX_PG_PORT', 5432)}"]\n`);
    expect(portDrift(more, readme, operations)).toEqual(['README "Deploy" does not name extra\'s MSGX_PG_PORT (5432)', 'docs/operations.md does not name 5432 (extra) among the published ports']);
    const open = compose.replace(entry('127.0.0.1', 'MSGX_API_PORT', 8080), entry('0.0.0.0', 'MSGX_API_PORT', 8080));
    expect(portDrift(open, readme, operations).filter((l) => l.startsWith('api: published as 0.0.0.0, not 127.0.0.1'))).toHaveLength(1);
    expect(portDrift(compose, readme, operations.replace("Prometheus's 9090 are published", "Prometheus's 9090 and 6379 are published"))).toEqual([
      'docs/operations.md names 6379, which compose does not publish',
    ]);
  });
});
