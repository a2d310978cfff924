// The alert rules under Prometheus's own evaluator: `promtool check rules` and `promtool test
// rules ops/prometheus-alerts.test.yml`. Every alert of the rules file has a scenario where it
// fires and one where it stays quiet. Without promtool (Debian package `prometheus`; .ci/run
// installs it) the test is skipped VISIBLY.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const promtool = spawnSync('promtool', ['--version']).status === 0;
if (!promtool) console.warn('SKIPPED: promtool not installed (apt-get install prometheus): ops/prometheus-alerts.yml is not evaluated');

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

  it('every runbook link points at a heading that exists', () => {
    const links = [...readFileSync('ops/prometheus-alerts.yml', 'utf8').matchAll(/runbook: "([^"#]+)#([^"]+)"/g)];
    expect(links.length).toBeGreaterThanOrEqual(3);
    for (const [, file, anchor] of links) {
      // GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes
      const anchors = [...readFileSync(file, 'utf8').matchAll(/^#+ (.+)$/gm)].map((m) =>
        m[1]
          .toLowerCase()
          .replace(/[^a-z0-9 _-]/g, '')
          .replace(/ /g, '-'),
      );
      expect(anchors, `${file}#${anchor}`).toContain(anchor);
    }
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
