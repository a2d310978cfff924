// npm run backfill-resume -- <msgId…> | --reason MISSING_ROW|TRANSIENT_DEADLINE
// Says on stderr why matched messages were left; exit 1 when nothing was resumed or a named id was left.
import { systemClock } from '../lib/core/clock.ts';
import { reportOk, resumeReport } from '../lib/pipeline/operator.ts';
import { listed, parseOperatorArgs, runOperatorCli } from './args.ts';

await runOperatorCli('backfill-resume', async (db) => {
  const a = parseOperatorArgs(process.argv.slice(2), ['--reason'], []);
  const reason = a.options['--reason'];
  if (reason && reason !== 'MISSING_ROW' && reason !== 'TRANSIENT_DEADLINE') throw new Error('--reason must be MISSING_ROW or TRANSIENT_DEADLINE');
  const r = await resumeReport(db, systemClock, { ids: a.ids, reason: reason as 'MISSING_ROW' | 'TRANSIENT_DEADLINE' | undefined });
  return { out: listed('resumed', 'backfill(s)', r.done), notes: r.untouched, ok: reportOk(r) };
});
