// npm run replay -- <msgId…> | --state FAILED|DEAD [--reason PREFIX] [--force]   (--help: usage)
// Moves whitelisted FAILED / DEAD(EXHAUSTED) messages back to PENDING (DEAD(MALFORMED|PROTOCOL) only with --force).
// Says on stderr why matched messages were left (e.g. "needs --force"); exit 1 when nothing was
// replayed or a named id was left, 2 on bad arguments.
import { systemClock } from '../lib/core/clock.ts';
import { targets } from '../lib/core/config.ts';
import { createAodbPool } from '../lib/db/mysql.ts';
import { replayReport, reportOk } from '../lib/pipeline/operator.ts';
import { listed, runOperatorCli, UsageError } from './args.ts';

const spec = {
  name: 'replay',
  valued: ['--state', '--reason'],
  flags: ['--force'],
  usage: `usage: npm run replay -- <msgId…> | --state FAILED|DEAD [--reason PREFIX] [--force]
  Moves FAILED and DEAD(EXHAUSTED) messages back to PENDING: the pump applies them again,
  against the current state.
  <msgId…>          these messages
  --state S         every message in state FAILED or DEAD
  --reason PREFIX   with --state: only reasons starting with PREFIX (EXHAUSTED, MALFORMED, PROTOCOL, …)
  --force           also DEAD(MALFORMED) / DEAD(PROTOCOL): the same inbox text is decoded again
                    (goes DEAD again unless the decoder was fixed); a never-read message
                    (MALFORMED: raw-missing) only once its inbox row is back
Prints "replayed N message(s): ids"; on stderr why matched messages were left. Exit 0 when
every asked-for message was replayed, 1 when nothing was or a named id was left, 2 on bad arguments.`,
};

await runOperatorCli(
  spec,
  async (db, a, config) => {
    const state = a.options['--state'];
    if (state && state !== 'FAILED' && state !== 'DEAD') throw new UsageError(`--state must be FAILED or DEAD, not ${state}`);
    if (!a.ids.length && !state) throw new UsageError('give message ids or --state FAILED|DEAD');
    const force = a.flags.has('--force');
    // With --force, never-read (raw-missing) messages are replayed only when their inbox row is back.
    const timeoutMs = config['msgx.io.timeout'];
    const inbox = force ? createAodbPool(targets(config).mariadb, { timeoutMs, connectionLimit: 1 }) : undefined;
    try {
      const r = await replayReport(db, systemClock, { ids: a.ids, state: state as 'FAILED' | 'DEAD' | undefined, reason: a.options['--reason'], force }, inbox && { inbox, timeoutMs });
      return { out: listed('replayed', 'message(s)', r.done), notes: r.untouched, ok: reportOk(r) };
    } finally {
      await inbox?.end();
    }
  },
  (a) => (a.flags.has('--force') ? ['postgres', 'mariadb'] : ['postgres']),
);
