// npm run config: every configuration key the processes read, with its default and what it does,
// from the one table that declares them (lib/core/config/keys.ts). Reads no environment value:
// nothing it prints can be a secret.
import { cliArgs } from './args.ts';

const SPEC = {
  name: 'config',
  positional: 'none',
  flags: ['--markdown'],
  usage: `usage: npm run config [-- --markdown]
  Prints every configuration key: its environment variable, its default and what it does
  (lib/core/config/keys.ts, the one place they are declared). --markdown: as a Markdown table.
  Nothing is read from the environment; no value of yours is shown. Exit 0.`,
} as const;

const args = cliArgs(SPEC);
const { describeConfig } = await import('../lib/core/config.ts');
const keys = describeConfig();

if (args.flags.has('--markdown')) {
  console.log('| environment | default | what |\n|---|---|---|');
  for (const k of keys) console.log(`| \`${k.env}\` | \`${k.default}\` | ${k.what} |`);
} else {
  const w = Math.max(...keys.map((k) => k.env.length));
  const d = Math.min(24, Math.max(...keys.map((k) => k.default.length)));
  for (const k of keys) console.log(`${k.env.padEnd(w)}  ${(k.default || '-').padEnd(d)}  ${k.what.replaceAll('`', '')}`);
}
