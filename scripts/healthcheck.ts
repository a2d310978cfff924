// Container healthcheck (docker-compose.yml): exit 0 when the named process answers /healthz
// with 200 on its configured port, 1 otherwise (or 2 on a bad name or configuration).
//   node scripts/healthcheck.ts <intake|pump|backfill|msg-dispatch|schd-dispatch|state-dispatch|retention|api>
import { loadConfig, type Config } from '../lib/core/config.ts';
import { PROCESS_NAMES, type ProcessName } from '../lib/core/tasks.ts';
import { cliArgs, usageExit } from './args.ts';

const NAMES: readonly ProcessName[] = PROCESS_NAMES;
const spec = {
  name: 'healthcheck',
  positional: 'words' as const,
  usage: `usage: node scripts/healthcheck.ts <${NAMES.join('|')}>
  Exit 0 when the process answers /healthz with 200 on its configured port, 1 otherwise,
  2 on a bad name or configuration.`,
};
const args = cliArgs(spec);
const name = args.words[0] as ProcessName;
if (args.words.length !== 1 || !NAMES.includes(name)) usageExit(spec, args.words.length ? `unknown process ${args.words.join(' ')}` : 'give a process name');
let config: Config;
try {
  config = loadConfig();
} catch (e) {
  process.stderr.write(`healthcheck: ${(e as Error).message}\n`);
  process.exit(2);
}
const url = `http://127.0.0.1:${config[`msgx.http.port.${name}`]}/healthz`;
try {
  const r = await fetch(url, { signal: AbortSignal.timeout(4000) });
  process.stdout.write(`${name}: ${r.status} ${await r.text()}\n`);
  process.exit(r.status === 200 ? 0 : 1);
} catch (e) {
  process.stdout.write(`${name}: ${url} ${(e as Error).message}\n`);
  process.exit(1);
}
