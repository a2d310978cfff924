// npm run recover-restore -- [--dry-run] [--help]
// After Postgres was restored from a backup (docs/operations.md "Postgres restored from a
// backup"): lists what Postgres forgot — inbox rows marked processed above intake's watermark,
// Redis flights newer than Postgres, msg-topic EVENT_IDs above Postgres's sequence — and, without
// --dry-run, recovers in this order:
//   1. the EVENT_ID sequence moves past the highest EVENT_ID on the msg topic (new events never
//      reuse an ID consumers already saw);
//   2. Redis is re-synced from Postgres: every flight key rewritten, keys of flights Postgres does
//      not have removed;
//   3. the lost inbox range is taken in again, as intake takes in new rows: every row from the
//      watermark up to the highest forgotten one becomes PENDING; the pump applies them strictly in
//      inbox order (an explicit action, as replay is: the gateway never replays on its own).
// The pump and intake hold while Postgres is behind; they resume by themselves within seconds of
// the command. Exit 0 when done (or nothing to do, or --dry-run), 2 on an error.
import { slices, targets } from '../lib/core/config.ts';
import { systemClock } from '../lib/core/clock.ts';
import { createAodbPool } from '../lib/db/mysql.ts';
import { createDb, createPool } from '../lib/db/postgres.ts';
import { createRedis, redisReady } from '../lib/db/redis.ts';
import { kafkaOptions } from '../lib/dispatch/kafka.ts';
import { createKafkaRestoreCheck } from '../lib/watches/restore-kafka.ts';
import { redisAhead } from '../lib/watches/restore-signs.ts';
import { lostRange, resyncRedis, takeInAgain } from '../lib/pipeline/restore-recover.ts';
import { createLogger } from '../lib/runtime/log.ts';
import * as Restore from '../lib/sql/restore.ts';
import { type CliSpec, cliArgs, cliConfig, failureLine, reach } from './args.ts';

const SPEC: CliSpec = {
  name: 'recover-restore',
  flags: ['--dry-run'],
  positional: 'none',
  usage: `usage: npm run recover-restore -- [--dry-run]

After a Postgres restore from a backup: lists what Postgres forgot (inbox rows marked processed
above intake's watermark, Redis flights newer than Postgres, msg-topic EVENT_IDs above Postgres's
sequence), then moves the EVENT_ID sequence past the topic, re-syncs Redis from Postgres and takes
the lost inbox range in again (the pump applies it in inbox order).

  --dry-run   list only, change nothing
  --help      this text
Exit 0 when done (or nothing to do, or --dry-run), 1 when a service refused or did not answer
(one line naming it and the setting to check), 2 on bad arguments, a bad setting or any other
error.`,
};

// arguments first (--help and a bad argument open nothing), then the configuration (an error: exit 2)
const dryRun = cliArgs(SPEC).flags.has('--dry-run');
const config = await cliConfig(SPEC.name);
await reach(SPEC.name, config, ['postgres', 'mariadb', 'redis', 'kafka']);
const s = slices(config);
const log = createLogger('recover-restore', config['msgx.log.level']);
const timeoutMs = s.io.timeoutMs;
const pool = createPool(targets(config).postgres, { max: 2, name: 'recover-restore' });
const db = createDb(pool);
const inbox = createAodbPool(targets(config).mariadb, { timeoutMs });
const redis = createRedis(targets(config).redis, timeoutMs);
const say = (line: string) => process.stdout.write(`${line}\n`);

try {
  const kafka = createKafkaRestoreCheck(kafkaOptions(s.kafka, log), s.kafka.msgTopic, db);
  // a read-only (shadow) instance: another instance marks the inbox, so processed rows above the watermark say nothing
  const lost = s.inbox.readOnly ? null : await lostRange(db, inbox, timeoutMs);
  await redisReady(redis, timeoutMs);
  const ahead = await redisAhead(db, redis, timeoutMs);
  const ids = await kafka.eventIds();
  const kafkaAhead = ids.topicHigh !== null && ids.topicHigh > ids.postgresHigh;
  say(
    lost
      ? `inbox: ${lost.processed} row(s) marked processed above intake's watermark ${lost.watermark} (${lost.lo}..${lost.hi}); ${lost.rows} row(s) in ${lost.watermark + 1}..${lost.hi} to take in again`
      : s.inbox.readOnly
        ? 'inbox: not checked (msgx.inbox.read-only: another instance marks the inbox)'
        : 'inbox: nothing marked processed above the watermark',
  );
  say(ahead ? `redis: ${ahead.flights} flight(s) newer than Postgres (e.g. ${ahead.sample.join(', ')})` : 'redis: no flight newer than Postgres');
  say(
    kafkaAhead
      ? `kafka: msg topic ${s.kafka.msgTopic} holds EVENT_ID ${ids.topicHigh}, Postgres's sequence is at ${ids.postgresHigh}`
      : `kafka: msg topic ${s.kafka.msgTopic} holds no EVENT_ID above Postgres's sequence (${ids.postgresHigh})`,
  );
  if (dryRun) {
    say('dry run: nothing changed');
  } else if (!lost && !ahead && !kafkaAhead) {
    say('nothing to recover');
  } else {
    if (kafkaAhead) {
      const high = (await Restore.advanceEventIds(db, ids.topicHigh!))?.high;
      say(`EVENT_ID sequence moved to ${high}: new events get higher IDs than any on the topic`);
    }
    const synced = await resyncRedis(db, redis, s.airport.timezone, timeoutMs);
    say(`redis re-synced from Postgres: ${synced.flights} flight key(s) rewritten, ${synced.removed} of flights Postgres does not have removed`);
    if (lost) {
      const taken = await takeInAgain(db, inbox, systemClock, timeoutMs, lost);
      say(`took in ${taken.length} message(s) again (${lost.watermark + 1}..${lost.hi}): the pump applies them in inbox order`);
    }
    log.info({ lost, redisAhead: ahead?.flights ?? 0, topicEventId: ids.topicHigh, postgresEventId: ids.postgresHigh }, 'recover-restore done');
  }
} catch (e) {
  process.stderr.write(`recover-restore: ${failureLine(e)}\n`);
  process.exitCode = 2;
} finally {
  await pool.end();
  await inbox.end();
  redis.disconnect();
}
