// Drift: every flag a CLI's parser takes (its CliSpec in scripts/*.ts, parsed by scripts/args.ts)
// is in the usage the CLI prints for --help, and in README "Operator tasks" wherever that CLI
// appears there. The usage is the text cliArgs prints for --help: the spec's `usage` template
// (read from the source: running 15 CLIs would cost seconds of the 2 cores). The comparison is
// also run on mutated copies: a planted drift is reported.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { dispatchSelection, dispatchSpec, parseArgs } from '../../../scripts/args.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');

interface Cli {
  script: string;
  /** The npm script name (README writes `npm run <name>`). */
  name: string;
  options: string[];
  usage: string;
}

const strings = (list: string | undefined) => [...(list ?? '').matchAll(/'([^']+)'/g)].map((m) => m[1]);

/** Every scripts/*.ts with a parser spec: its name and the options of its `valued` and `flags` lists. */
function clis(): Cli[] {
  const out: Cli[] = [];
  for (const f of readdirSync(path.join(ROOT, 'scripts')).filter((f) => f.endsWith('.ts') && f !== 'args.ts')) {
    const src = readFileSync(path.join(ROOT, 'scripts', f), 'utf8');
    const script = `scripts/${f}`;
    const d = /dispatchSpec\('([\w:-]+)'/.exec(src);
    if (d) {
      const spec = dispatchSpec(d[1], '');
      out.push({ script, name: d[1], options: [...(spec.valued ?? []), ...(spec.flags ?? [])], usage: spec.usage });
      continue;
    }
    if (!/\bcliArgs\(|\brunOperatorCli\(/.test(src)) continue;
    const name = /\bname: '([\w:-]+)'/.exec(src)?.[1];
    if (!name) throw new Error(`${script}: a CLI spec without a name`);
    const usage = /\busage: `([^`]*)`/.exec(src)?.[1];
    if (!usage) throw new Error(`${script}: a CLI spec without a usage text`);
    out.push({ script, name, options: [...strings(/\bvalued: \[([^\]]*)\]/.exec(src)?.[1]), ...strings(/\bflags: \[([^\]]*)\]/.exec(src)?.[1])], usage });
  }
  return out;
}

const mentions = (text: string, option: string) => new RegExp(`(?<![\\w-])${option}(?![\\w-])`).test(text);

/** README "Operator tasks": the table's rows that run this CLI (`npm run <name>`), joined. */
function readmeRows(readme: string, name: string): string | null {
  const section = readme.split(/^## /m).find((s) => s.startsWith('Operator tasks'));
  if (!section) return null;
  const rows = section.split('\n').filter((l) => l.startsWith('|') && new RegExp(`npm run ${name}(?![\\w:-])`).test(l));
  return rows.length ? rows.join('\n') : null;
}

/** Flags the parser takes that the usage or the README rows of the CLI do not name. */
function drift(cli: Cli, usage: string, readme: string): string[] {
  const out: string[] = [];
  for (const o of cli.options) if (!mentions(usage, o)) out.push(`${cli.script}: ${o} is not in its usage`);
  const rows = readmeRows(readme, cli.name);
  if (rows !== null) for (const o of cli.options) if (!mentions(rows, o)) out.push(`README "Operator tasks" (npm run ${cli.name}): ${o} is not named`);
  return out;
}

const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const CLIS = clis();
describe('CLI usage and README operator tasks vs the parsers', () => {
  it('finds the CLIs and their flags', () => {
    const byName = Object.fromEntries(CLIS.map((c) => [c.name, c.options]));
    expect(byName['dispatch-replay']).toEqual(['--flid', '--target', '--all']);
    expect(byName['recover-restore']).toEqual(['--dry-run']);
    expect(byName.replay).toEqual(['--state', '--reason', '--force']);
    expect(CLIS.length).toBeGreaterThanOrEqual(14);
  });

  it('every flag a parser takes is in the CLI’s --help and in README where the CLI appears', () => {
    for (const c of CLIS) expect(c.usage, c.script).toMatch(/^usage: /);
    expect(CLIS.flatMap((c) => drift(c, c.usage, README))).toEqual([]);
  });

  it('reports each planted drift', () => {
    const replay = CLIS.find((c) => c.name === 'replay')!;
    const resend = CLIS.find((c) => c.name === 'dispatch-resend')!;
    // a flag added to the parser only
    expect(drift({ ...replay, options: [...replay.options, '--since'] }, replay.usage, README)).toEqual([
      'scripts/replay.ts: --since is not in its usage',
      'README "Operator tasks" (npm run replay): --since is not named',
    ]);
    // a flag dropped from the usage
    expect(drift(replay, replay.usage.replaceAll('--force', '--forced'), README)).toEqual(['scripts/replay.ts: --force is not in its usage']);
    // a flag dropped from README's rows
    expect(drift(resend, resend.usage, README.replaceAll('--acknowledge', '--ack'))).toEqual(['README "Operator tasks" (npm run dispatch-resend): --acknowledge is not named']);
  });
});

/** The --target values the dispatch CLIs accept (dispatchSelection), tried on every candidate. */
function acceptedTargets(candidates: Iterable<string>): string[] {
  const spec = dispatchSpec('dispatch-replay', '');
  return [...new Set(candidates)]
    .filter((t) => {
      try {
        dispatchSelection(parseArgs(spec, ['--all', '--target', t]));
        return true;
      } catch {
        return false;
      }
    })
    .sort();
}

/** Where a document lists the --target values (`--target a|b|c`, pipes escaped in tables) otherwise than the parser takes them. */
function targetDrift(docs: Record<string, string>): string[] {
  const mentions = Object.entries(docs).flatMap(([f, text]) => [...text.matchAll(/--target ([a-z]+(?:\\?\|[a-z]+)*)/g)].map((m) => ({ f, values: m[1].split(/\\?\|/) })));
  const accepted = acceptedTargets([...mentions.flatMap((m) => m.values), 'msg', 'schd', 'state']);
  const out: string[] = [];
  for (const { f, values } of mentions) {
    for (const v of values) if (!accepted.includes(v)) out.push(`${f}: --target ${v} is not accepted (${accepted.join('|')})`);
    // a list of alternatives is the complete list; a single value is an example
    if (values.length > 1 && values.join('|') !== accepted.join('|') && [...values].sort().join('|') !== accepted.join('|'))
      out.push(`${f}: --target ${values.join('|')}, the parser takes ${accepted.join('|')}`);
  }
  return out;
}

describe('--target values in the documents vs the parser', () => {
  const files = ['README.md', 'docs/consumers.md', 'docs/operations.md', 'docs/decisions.md'];
  const docs = { ...Object.fromEntries(files.map((f) => [f, readFileSync(path.join(ROOT, f), 'utf8')])), 'dispatch-replay/-skip usage': dispatchSpec('dispatch-replay', '').usage };

  it('every list of --target values is the one the parser takes', () => {
    expect(acceptedTargets(['msg', 'schd', 'state', 'all', 'x'])).toEqual(['msg', 'schd', 'state']);
    expect(targetDrift(docs)).toEqual([]);
  });

  it('reports a planted drift: a list missing a value, a value the parser refuses', () => {
    expect(targetDrift({ 'README.md': '`-- --all [--target msg\\|schd]`' })).toEqual(['README.md: --target msg|schd, the parser takes msg|schd|state']);
    expect(targetDrift({ 'docs/consumers.md': '`--all [--target msg|schd|state|all]`' })).toEqual([
      'docs/consumers.md: --target all is not accepted (msg|schd|state)',
      'docs/consumers.md: --target msg|schd|state|all, the parser takes msg|schd|state',
    ]);
  });
});
