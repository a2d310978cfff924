// Drift: the processes as the documents list them — README "Processes" (name, port) and the
// scrape configs ops/prometheus.yml (compose: host = process name) and ops/prometheus-local.yml
// (127.0.0.1) with their job and `process` label — against the Procfile and the config's port
// defaults (msgx.http.port.<process>). Each comparison is also run on a mutated copy: a planted
// drift must be reported. (test/unit/deploy.test.ts checks the compose file against the Procfile.)
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { describeConfig } from '../../../lib/core/config.ts';
import { PROCESS_NAMES, TASK } from '../../../lib/core/tasks.ts';
import { parseProcfile } from '../../../scripts/start.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const read = (f: string) => readFileSync(path.join(ROOT, f), 'utf8');

/** The truth: every Procfile process with its default port, sorted by name. */
function expected(procfile: string): string[] {
  return parseProcfile(procfile)
    .map((p) => {
      const port = describeConfig().find((c) => c.key === `msgx.http.port.${p.name}`)?.default ?? '(no msgx.http.port key)';
      return `${p.name} ${port}`;
    })
    .sort();
}

/** README "Processes": the rows of the table headed `| process | duty | port | single writer |`, as "name port". */
function readmeProcesses(readme: string): string[] {
  const lines = readme.split('\n');
  const at = lines.findIndex((l) => /^\| process \| duty \| port \|/.test(l));
  if (at < 0) return ['(no process table)'];
  const rows: string[] = [];
  for (const l of lines.slice(at + 2)) {
    if (!l.startsWith('|')) break;
    const cells = l.split(/(?<!\\)\|/).map((c) => c.trim());
    rows.push(`${cells[1]} ${cells[3]}`);
  }
  return rows.sort();
}

interface ScrapeConfig {
  scrape_configs: { job_name: string; static_configs: { targets: string[]; labels?: { process?: string } }[] }[];
}

/** A scrape config's targets as "name port", with what is wrong about each (job, label, host). */
function scrapeTargets(text: string, host: (name: string) => string): { targets: string[]; problems: string[] } {
  const cfg = parse(text) as ScrapeConfig;
  const targets: string[] = [];
  const problems: string[] = [];
  for (const job of cfg.scrape_configs)
    for (const s of job.static_configs)
      for (const t of s.targets) {
        const [h, port] = t.split(':');
        const name = s.labels?.process ?? '(no process label)';
        targets.push(`${name} ${port}`);
        if (job.job_name !== 'msgx') problems.push(`${t}: job ${job.job_name}, not msgx (MsgxProcessDown selects job=~"msgx.*")`);
        if (h !== host(name)) problems.push(`${t}: host ${h}, expected ${host(name)} for process ${name}`);
      }
  return { targets: targets.sort(), problems };
}

const diff = (documented: string[], truth: string[]) => [
  ...truth.filter((x) => !documented.includes(x)).map((x) => `missing or different: ${x}`),
  ...documented.filter((x) => !truth.includes(x)).map((x) => `not in Procfile/defaults: ${x}`),
];

function drift(files: { procfile: string; readme: string; prom: string; promLocal: string }): string[] {
  const truth = expected(files.procfile);
  const compose = scrapeTargets(files.prom, (n) => n);
  const local = scrapeTargets(files.promLocal, () => '127.0.0.1');
  return [
    ...diff(readmeProcesses(files.readme), truth).map((d) => `README "Processes": ${d}`),
    ...[...diff(compose.targets, truth), ...compose.problems].map((d) => `ops/prometheus.yml: ${d}`),
    ...[...diff(local.targets, truth), ...local.problems].map((d) => `ops/prometheus-local.yml: ${d}`),
  ];
}

const WORDS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'];
/** "seven processes" in a comment where the Procfile has eight. */
function countDrift(text: string, n: number): string[] {
  const counted = [...text.matchAll(/\b(one|two|three|four|five|six|seven|eight|nine|ten) processes\b/g)].map((m) => m[1]);
  if (!counted.length) return ['counts no processes'];
  return counted.filter((c) => WORDS.indexOf(c) !== n).map((c) => `says ${c} processes, the Procfile has ${n}`);
}

const files = { procfile: read('Procfile'), readme: read('README.md'), prom: read('ops/prometheus.yml'), promLocal: read('ops/prometheus-local.yml') };

describe('processes: README and Prometheus configs vs Procfile and port defaults', () => {
  it('agree', () => {
    expect(expected(files.procfile)).toHaveLength(8);
    expect(drift(files)).toEqual([]);
  });

  it('the comments of both scrape configs count the Procfile processes', () => {
    const n = parseProcfile(files.procfile).length;
    for (const f of ['prom', 'promLocal'] as const) expect(countDrift(files[f], n), f).toEqual([]);
    expect(countDrift(files.prom.replace('all eight processes', 'all seven processes'), n)).toEqual(['says seven processes, the Procfile has 8']);
  });

  it('reports each planted drift', () => {
    const cases: [Partial<typeof files>, RegExp][] = [
      [{ readme: files.readme.replace('| 9407 |', '| 9408 |') }, /README "Processes": missing or different: state-dispatch 9407/],
      [{ readme: files.readme.replace(/^\| state-dispatch \|.*\n/m, '') }, /README "Processes": missing or different: state-dispatch/],
      [{ procfile: `${files.procfile.trimEnd()}\nreaper: node workers/reaper.ts\n` }, /README "Processes": missing or different: reaper/],
      [{ prom: files.prom.replace('      - targets: ["state-dispatch:9407"]\n        labels: { process: state-dispatch }\n', '') }, /ops\/prometheus.yml: missing or different: state-dispatch 9407/],
      [{ prom: files.prom.replace('"pump:9402"', '"pump:9502"') }, /ops\/prometheus.yml: .*pump 9502/],
      [{ prom: files.prom.replace('"pump:9402"', '"intake:9402"') }, /ops\/prometheus.yml: intake:9402: host intake, expected pump/],
      [{ promLocal: files.promLocal.replace('job_name: msgx', 'job_name: gateway') }, /ops\/prometheus-local.yml: .*job gateway/],
      [{ promLocal: files.promLocal.replace('"127.0.0.1:8080"', '"localhost:8080"') }, /ops\/prometheus-local.yml: localhost:8080: host localhost/],
    ];
    for (const [edit, want] of cases) expect(drift({ ...files, ...edit }).join('\n')).toMatch(want);
  });
});

describe('README "Processes": the api row lists every operator task', () => {
  /** The api's tasks: every task of TASK that is no process's duty (intake, pump, backfill run their own). */
  const apiTasks = () =>
    Object.values(TASK)
      .filter((t) => !(PROCESS_NAMES as readonly string[]).includes(t))
      .sort();
  /** The tasks the README's api row names (`tasks \`a\`, \`b\`…`). */
  const listed = (readme: string) => {
    const row = readme.split('\n').find((l) => l.startsWith('| api |')) ?? '';
    return [...(/tasks ([^;|]*)/.exec(row)?.[1].matchAll(/`([\w-]+)`/g) ?? [])].map((m) => m[1]).sort();
  };

  it('equal', () => {
    expect(apiTasks()).toContain('dispatch-skip');
    expect(listed(read('README.md'))).toEqual(apiTasks());
  });

  it('a task left out is reported', () => {
    expect(listed(read('README.md').replace(', `dispatch-skip`', ''))).not.toEqual(apiTasks());
  });
});
