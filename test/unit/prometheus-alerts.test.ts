// The alert rules under Prometheus's own evaluator: `promtool check rules` and `promtool test
// rules ops/prometheus-alerts.test.yml`. Every alert of the rules file has a scenario where it
// fires and one where it stays quiet. Without promtool (Debian package `prometheus`; .ci/run
// installs it) the test is skipped VISIBLY.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const promtool = spawnSync('promtool', ['--version']).status === 0;
if (!promtool) console.warn('SKIPPED: promtool not installed (apt-get install prometheus): ops/prometheus-alerts.yml is not evaluated');

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes. */
const anchorOf = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, '')
    .replace(/ /g, '-');

/** The runbook links (`runbook: "file#anchor"`) of a rules file whose heading does not exist; every alert must have one. */
function brokenRunbooks(rules: string, read: (file: string) => string): string[] {
  const broken: string[] = [];
  for (const [, file, anchor] of rules.matchAll(/runbook: "([^"#]+)#([^"]+)"/g)) {
    const anchors = [...read(file).matchAll(/^#+ (.+)$/gm)].map((m) => anchorOf(m[1]));
    if (!anchors.includes(anchor)) broken.push(`${file}#${anchor}`);
  }
  return broken;
}

describe('alert rules (ops/prometheus-alerts.yml)', () => {
  it('every alert has a firing and a quiet scenario in ops/prometheus-alerts.test.yml', () => {
    const alerts = [...readFileSync('ops/prometheus-alerts.yml', 'utf8').matchAll(/- alert: (\w+)/g)].map((m) => m[1]);
    const tests = readFileSync('ops/prometheus-alerts.test.yml', 'utf8');
    expect(alerts.length).toBeGreaterThanOrEqual(10);
    for (const a of alerts) {
      expect(tests, `${a} fires somewhere`).toMatch(new RegExp(`alertname: ${a}\\n\\s+exp_alerts:\\n\\s+- exp_labels`));
      expect(tests, `${a} stays quiet somewhere`).toMatch(new RegExp(`alertname: ${a}, exp_alerts: \\[\\] \\}`));
    }
  });

  it('every alert has a runbook link, and it points at a heading that exists (a planted broken link is reported)', () => {
    const rules = readFileSync('ops/prometheus-alerts.yml', 'utf8');
    for (const block of rules.split(/(?=^ +- alert: )/m).slice(1)) expect(block, block.split('\n')[0]).toMatch(/^ +runbook: "/m);
    expect(brokenRunbooks(rules, (f) => readFileSync(f, 'utf8'))).toEqual([]);
    // drift planted in copies: a renamed heading, a link to a heading that never existed
    const ops = readFileSync('docs/operations.md', 'utf8');
    const first = /runbook: "docs\/operations\.md#([^"]+)"/.exec(rules)![1];
    const renamed = ops.replace(/^(#+ .+)$/gm, (h) => (anchorOf(h.replace(/^#+ /, '')) === first ? `${h} (renamed)` : h));
    expect(brokenRunbooks(rules, (f) => (f === 'docs/operations.md' ? renamed : readFileSync(f, 'utf8')))).toContain(`docs/operations.md#${first}`);
    expect(brokenRunbooks(`${rules}\n        runbook: "docs/operations.md#no-such-heading"`, (f) => readFileSync(f, 'utf8'))).toEqual(['docs/operations.md#no-such-heading']);
  });

  it.skipIf(!promtool)('promtool check rules and promtool test rules pass', () => {
    const check = spawnSync('promtool', ['check', 'rules', 'ops/prometheus-alerts.yml'], { encoding: 'utf8' });
    expect(check.stdout + check.stderr).toContain('SUCCESS');
    expect(check.status).toBe(0);
    const test = spawnSync('promtool', ['test', 'rules', 'ops/prometheus-alerts.test.yml'], { encoding: 'utf8' });
    expect(test.stdout + test.stderr).toContain('SUCCESS');
    expect(test.status, test.stdout + test.stderr).toBe(0);
  });
});
