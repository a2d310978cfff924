// Drift: every description of an alert — its row in docs/operations.md "Alerts" and its summary in
// ops/prometheus-alerts.yml — against the rule's expression. A time it names is one the rule has:
// the threshold of a seconds gauge (`… > 300`: 5 min), the `for` (2 min), or both together (7 min),
// which a description naming both must give, since that is when the alert fires. A description
// that names stores (Redis, the state topic, the msg topic) names exactly those the expression
// selects (none selected: all three). The comparison also runs on planted drifts.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const read = (f: string) => readFileSync(path.join(ROOT, f), 'utf8');

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  annotations: { summary: string };
}

const STORES = { redis: /\bredis\b/i, 'state-topic': /\bstate topic\b/i, 'msg-topic': /\bmsg topic\b/i } as const;
type Store = keyof typeof STORES;

/** What a rule implies: minutes of threshold, of `for`, in all; the stores it watches (null: none of msgx_mirror_*). */
function implied(r: Rule): { threshold: number; forMin: number; stores: Store[] | null } {
  const forMin = r.for ? Number(/^(\d+)m$/.exec(r.for)?.[1] ?? Number.NaN) : 0;
  const t = /_seconds\)?\s*>\s*(\d+)/.exec(r.expr);
  const threshold = t ? Number(t[1]) / 60 : 0;
  if (!/msgx_mirror_/.test(r.expr)) return { threshold, forMin, stores: null };
  const selected = [...r.expr.matchAll(/store="([\w-]+)"/g)].map((m) => m[1] as Store);
  return { threshold, forMin, stores: selected.length ? selected : (Object.keys(STORES) as Store[]) };
}

/** What is wrong with one description of a rule ('' parts: none). */
function descriptionDrift(where: string, text: string, r: Rule): string[] {
  const out: string[] = [];
  const { threshold, forMin, stores } = implied(r);
  const total = threshold + forMin;
  const minutes = [...text.matchAll(/(\d+) min(?:utes?)?\b/g)].map((m) => Number(m[1]));
  for (const m of minutes) if (![threshold, forMin, total].includes(m)) out.push(`${where}: ${r.alert} "${m} min" is not its threshold (${threshold}), its for (${forMin}) or both (${total})`);
  if (minutes.length && threshold > 0 && forMin > 0 && !minutes.includes(total))
    out.push(`${where}: ${r.alert} fires after ${total} min (> ${threshold} for ${forMin}); the description does not say so`);
  const named = (Object.keys(STORES) as Store[]).filter((s) => STORES[s].test(text));
  if (named.length && stores && [...named].sort().join() !== [...stores].sort().join()) out.push(`${where}: ${r.alert} names ${named.join(', ')}; its expression watches ${stores.join(', ')}`);
  return out;
}

/** The rows of operations.md's alerts table: alert name → its "fires when" text (a row of several alerts splits at " / "). */
function tableDescriptions(md: string): Map<string, string> {
  const out = new Map<string, string>();
  const lines = md.split('\n');
  const at = lines.findIndex((l) => /^\| alert \| fires when \|/.test(l));
  for (const l of lines.slice(at + 2)) {
    if (!l.startsWith('|')) break;
    const cells = l.split(/(?<!\\)\|/).map((c) => c.trim());
    const names = cells[1].split(',').map((n) => n.trim());
    const parts = names.length > 1 ? cells[2].split(' / ') : [cells[2]];
    names.forEach((n, i) => out.set(n, parts[i] ?? parts[0]));
  }
  return out;
}

function drift(rulesYaml: string, operations: string): string[] {
  const rules = (parse(rulesYaml) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);
  const table = tableDescriptions(operations);
  const out: string[] = [];
  for (const r of rules) {
    const row = table.get(r.alert);
    if (row === undefined) out.push(`docs/operations.md: no row for ${r.alert}`);
    else out.push(...descriptionDrift('docs/operations.md', row, r));
    out.push(...descriptionDrift('ops/prometheus-alerts.yml summary', r.annotations.summary, r));
  }
  return out;
}

describe('alert descriptions against their rules', () => {
  const rules = read('ops/prometheus-alerts.yml');
  const ops = read('docs/operations.md');

  it("every alert has a row, and every time and store a description names is the rule's", () => {
    expect(tableDescriptions(ops).size).toBeGreaterThan(10);
    expect(drift(rules, ops)).toEqual([]);
  });

  it('a planted drift is reported: the inbox alert said to fire after 2 min (it is 3), the rebuild alert said to be Redis only', () => {
    const planted = ops
      .replace(/\| MsgxInboxUnreachable \| [^|]*\|/, '| MsgxInboxUnreachable | no intake read the inbox for 2 min |')
      .replace('a derived store (Redis, state topic, msg topic: its losses) rebuilt', 'Redis rebuilt');
    expect(drift(rules, planted)).toEqual([
      'docs/operations.md: MsgxInboxUnreachable fires after 3 min (> 2 for 1); the description does not say so',
      'docs/operations.md: MsgxMirrorRebuildsRecurring names redis; its expression watches redis, state-topic, msg-topic',
    ]);
  });

  it('a planted time that is no part of the rule is reported', () => {
    const planted = rules.replace('for 2 minutes (its /healthz says why)', 'for 4 minutes (its /healthz says why)');
    expect(drift(planted, ops)).toEqual(['ops/prometheus-alerts.yml summary: MsgxDependencyDown "4 min" is not its threshold (0), its for (2) or both (2)']);
  });
});
