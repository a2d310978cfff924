// Run the whole pipeline in-process (intake → pump → backfill) until the inbox is settled. The
// pump decodes in its decode worker as in production (the next batch decoded while one commits).
import type { Clock } from '../../lib/core/clock.ts';
import { type Config, slices } from '../../lib/core/config.ts';
import { buildDecoder, buildMirror, buildRegistry } from '../../lib/app/composition.ts';
import { backfillRound } from '../../lib/pipeline/backfill.ts';
import { intakeRound } from '../../lib/pipeline/intake.ts';
import { drain, pumpSettings, withSqlPorts } from '../../lib/pipeline/pump/loop.ts';
import { silentLog, type TestServices } from './services.ts';

export async function runPipelineUntilSettled(s: TestServices, config: Config, clock: Clock, maxRounds = 200): Promise<void> {
  const registry = buildRegistry({ ruleOverride: slices(config).pump.ruleOverride });
  const mirror = buildMirror({ db: s.db, redis: s.redis, airport: slices(config).airport });
  const decoder = buildDecoder(slices(config).pump, slices(config).airport);
  const base = { clock, config, intake: slices(config).intake, backfill: slices(config).backfill, log: silentLog };
  try {
    for (let round = 0; round < maxRounds; round++) {
      const r = await intakeRound({ ...base, db: s.db, inbox: s.inbox });
      const p = await drain(withSqlPorts({ ...base, ...pumpSettings(config), session: s.session, terminalDb: s.db, inbox: s.inbox, registry, mirror, decoder }), 60_000);
      const b = await backfillRound({ ...base, db: s.db, inbox: s.inbox });
      if (r.enqueued.length === 0 && p.processed === 0 && b.candidates === 0 && r.scanned === 0) return;
      if (p.next instanceof Date) throw new Error(`head is waiting for a retry at ${p.next.toISOString()}`);
    }
    throw new Error('pipeline did not settle');
  } finally {
    await decoder.close();
  }
}
