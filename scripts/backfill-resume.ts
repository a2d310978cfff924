// npm run backfill-resume -- <msgId…> | --reason MISSING_ROW|TRANSIENT_DEADLINE
import { systemClock } from '../lib/clock.ts';
import { resumeBackfills } from '../lib/pipeline/operator.ts';
import { listed, parseOperatorArgs, runOperatorCli } from './args.ts';

await runOperatorCli('backfill-resume', async (db) => {
  const a = parseOperatorArgs(process.argv.slice(2), ['--reason'], []);
  const reason = a.options['--reason'];
  if (reason && reason !== 'MISSING_ROW' && reason !== 'TRANSIENT_DEADLINE') throw new Error('--reason must be MISSING_ROW or TRANSIENT_DEADLINE');
  return listed('resumed', 'backfill(s)', await resumeBackfills(db, systemClock, { ids: a.ids, reason: reason as 'MISSING_ROW' | 'TRANSIENT_DEADLINE' | undefined }));
});
