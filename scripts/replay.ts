// npm run replay -- <msgId…> | --state FAILED|DEAD [--reason PREFIX] [--force]
// Moves whitelisted FAILED / DEAD(EXHAUSTED) messages back to PENDING (DEAD(MALFORMED|PROTOCOL) only with --force).
// Says on stderr why matched messages were left (e.g. "needs --force"); exit 1 when nothing was
// replayed or a named id was left, 2 on bad arguments.
import { systemClock } from '../lib/core/clock.ts';
import { replayReport, reportOk } from '../lib/pipeline/operator.ts';
import { listed, parseOperatorArgs, runOperatorCli } from './args.ts';

await runOperatorCli('replay', async (db) => {
  const a = parseOperatorArgs(process.argv.slice(2), ['--state', '--reason'], ['--force']);
  const state = a.options['--state'];
  if (state && state !== 'FAILED' && state !== 'DEAD') throw new Error('--state must be FAILED or DEAD');
  const r = await replayReport(db, systemClock, { ids: a.ids, state: state as 'FAILED' | 'DEAD' | undefined, reason: a.options['--reason'], force: a.flags.has('--force') });
  return { out: listed('replayed', 'message(s)', r.done), notes: r.untouched, ok: reportOk(r) };
});
