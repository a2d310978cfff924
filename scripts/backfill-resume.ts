// npm run backfill-resume -- <msgId…> | --reason MISSING_ROW|TRANSIENT_DEADLINE   (--help: usage)
// Checks first (the inbox rows must be there; a never-applied message is refused with the
// command that recovers it); says on stderr what it left and why; exit 1 when nothing was
// resumed or a named id was left.
import { systemClock } from '../lib/core/clock.ts';
import { targets } from '../lib/core/config.ts';
import { createAodbPool } from '../lib/db/mysql.ts';
import { reportOk, resumeReport } from '../lib/pipeline/operator.ts';
import { listed, runOperatorCli, UsageError } from './args.ts';

const spec = {
  name: 'backfill-resume',
  valued: ['--reason'],
  usage: `usage: npm run backfill-resume -- <msgId…> | --reason MISSING_ROW|TRANSIENT_DEADLINE
  Backfill retries writing the processing time into the inbox for abandoned messages whose
  inbox row is there now.
  <msgId…>          these messages
  --reason R        every backfill abandoned as R (MISSING_ROW or TRANSIENT_DEADLINE)
Refused: a message that was never applied (DEAD "MALFORMED: raw-missing": its row was gone when
the pump read it) — marking it would tell the AODB it was applied; when its row is back,
npm run replay -- <msgId> --force applies it. Left: a message whose inbox row is still missing.
Prints "resumed N backfill(s): ids"; on stderr what was left and why. Exit 0 when every
asked-for message was resumed, 1 when nothing was, a named id was left or a service refused or
did not answer (nothing resumed), 2 on bad arguments or a bad setting.`,
};

await runOperatorCli(
  spec,
  async (db, a, config) => {
    const reason = a.options['--reason'];
    if (reason && reason !== 'MISSING_ROW' && reason !== 'TRANSIENT_DEADLINE') throw new UsageError(`--reason must be MISSING_ROW or TRANSIENT_DEADLINE, not ${reason}`);
    if (!a.ids.length && !reason) throw new UsageError('give message ids or --reason MISSING_ROW|TRANSIENT_DEADLINE');
    const timeoutMs = config['msgx.io.timeout'];
    const inbox = createAodbPool(targets(config).mariadb, { timeoutMs, connectionLimit: 1 });
    try {
      const r = await resumeReport({ db, inbox, clock: systemClock, timeoutMs }, { ids: a.ids, reason: reason as 'MISSING_ROW' | 'TRANSIENT_DEADLINE' | undefined });
      return { out: listed('resumed', 'backfill(s)', r.done), notes: r.untouched, ok: reportOk(r) };
    } finally {
      await inbox.end();
    }
  },
  () => ['postgres', 'mariadb'],
);
