// The configuration's reference is the table that declares it (lib/core/config/keys.ts), printed
// by `npm run config`: every key with its environment name, default and what it does; every key a
// slice reads is declared; README points there instead of keeping a copy that can drift.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeConfig, loadConfig, sliceKeys } from '../../../lib/core/config.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const config = (...args: string[]) => spawnSync(process.execPath, ['scripts/config.ts', ...args], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, DATABASE_PASSWORD: 'hunter2-not-shown' } });

describe('configuration reference (npm run config)', () => {
  it('every key has its environment name, a default that passes its own check, and a description; every slice key is declared', () => {
    const keys = describeConfig();
    expect(keys.length).toBeGreaterThan(100);
    for (const k of keys) expect({ key: k.key, what: k.what.length > 3 }).toEqual({ key: k.key, what: true });
    // the defaults together load (dev mode: the local defaults are loopback, plain text)
    expect(() => loadConfig({ MSGX_DEV_MODE: 'true' })).not.toThrow();
    const declared = new Set(keys.map((k) => k.key));
    expect(sliceKeys().filter((k) => !declared.has(k))).toEqual([]);
  });

  it('prints every key, as text and as a Markdown table, and never a value of the environment', () => {
    const text = config();
    expect(text.status).toBe(0);
    const md = config('--markdown');
    expect(md.status).toBe(0);
    for (const k of describeConfig()) {
      expect(text.stdout).toContain(k.env);
      expect(md.stdout).toContain(`| \`${k.env}\` | \`${k.default}\` | ${k.what} |`);
    }
    expect(text.stdout + md.stdout).not.toContain('hunter2-not-shown');
    expect(config('--bogus').status).toBe(2);
  });

  it('README names the command and keeps no copy of the table', () => {
    expect(README).toContain('`npm run config` prints every key');
    expect(README).not.toMatch(/^\| environment \| (key \| )?default \| what \|/m);
  });
});
