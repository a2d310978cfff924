// R1: SIGKILL chaos. The same input twice — a SCHD DNLD of FLIGHTS flights then MESSAGES FLOPs —
// once crash-free and once while a random process (intake, pump, backfill, msg-dispatch,
// schd-dispatch) is killed with SIGKILL every 0.3–1.5 s from the moment the processes start on
// the full inbox (and started again at once), until the backlog drains — the pump drains 20,000
// messages in a few seconds, so a slower schedule, or processes already running while the inbox
// was fed, let a run end before its first kill. A chaos run that killed
// fewer than 3 processes proves nothing and fails. Both final states must be equal: same flight states (digest, UPDATED_AT left out),
// same outbox events (FLID, STATE_VERSION), every SENT event on Kafka, per-FLID order on Kafka,
// nothing DEAD. Prints one JSON document (RELIABILITY.md).
//   node scripts/reliability/r1-chaos.ts [messages=20000] [flights=400] [timeoutMin=60]
import { scriptHelp } from '../args.ts';
import { drained, feedSnapshot, finalState, log, machine, openRig, progress, sleep, waitFor, type FinalState } from './harness.ts';

scriptHelp(import.meta.url);
const MESSAGES = Number(process.argv[2] ?? 20_000);
const FLIGHTS = Number(process.argv[3] ?? 400);
const TIMEOUT_MS = Number(process.argv[4] ?? 60) * 60_000;
const PROCESSES = ['intake', 'pump', 'backfill', 'msg-dispatch', 'schd-dispatch', 'state-dispatch'];

async function oneRun(chaos: boolean): Promise<{ final: FinalState; drainMs: number; kills: Record<string, number> }> {
  const rig = await openRig({ MSGX_LOG_LEVEL: 'warn' });
  const kills: Record<string, number> = {};
  try {
    // the whole input first, then the processes: the backlog is worked off under the kills (fed
    // while running, it was drained before the first kill)
    await feedSnapshot(rig, FLIGHTS);
    await rig.feed(MESSAGES, 0, FLIGHTS);
    const expected = MESSAGES + 1;
    log(`${chaos ? 'chaos' : 'crash-free'} run: ${expected} messages in the inbox`);
    const t0 = Date.now();
    for (const name of PROCESSES) rig.start(name);
    let done = false;
    const killer = (async () => {
      while (chaos && !done) {
        await sleep(300 + Math.random() * 1200);
        if (done) break;
        const name = PROCESSES[Math.floor(Math.random() * PROCESSES.length)];
        const w = rig.workers.filter((x) => x.name === name && x.child.exitCode === null && x.child.signalCode === null).at(-1);
        if (!w) continue;
        await rig.kill9(w);
        kills[name] = (kills[name] ?? 0) + 1;
        rig.start(name);
      }
    })();
    const report = setInterval(async () => {
      const p = await progress(rig.db).catch(() => null);
      if (p) log(`  ${Math.round((Date.now() - t0) / 1000)} s: ${p.terminal}/${expected} terminal, ${p.unbackfilled} unbackfilled, ${p.unsent} unsent, kills ${JSON.stringify(kills)}`);
    }, 15_000);
    try {
      await waitFor('the backlog to drain', () => drained(rig.db, expected), TIMEOUT_MS, 500);
    } finally {
      done = true;
      clearInterval(report);
      await killer;
    }
    const drainMs = Date.now() - t0;
    await sleep(3000); // let the last acknowledged sends settle before reading the topic
    return { final: await finalState(rig), drainMs, kills };
  } finally {
    await rig.close();
  }
}

const started = new Date().toISOString();
const clean = await oneRun(false);
const chaos = await oneRun(true);
const same = (k: keyof FinalState) => JSON.stringify(clean.final[k]) === JSON.stringify(chaos.final[k]);
const verdict = {
  equalFlightStates: same('flightDigest') && same('flights'),
  equalEvents: same('eventDigest') && same('events'),
  equalOutcomes: same('byState'),
  everyEventOnKafka: chaos.final.kafka.missingEvents === 0 && clean.final.kafka.missingEvents === 0,
  perFlidOrder: chaos.final.kafka.orderViolations === 0,
  nothingDead: chaos.final.deadMessages + chaos.final.deadEvents === 0,
  killedAtLeastThree: Object.values(chaos.kills).reduce((a, n) => a + n, 0) >= 3,
};
console.log(JSON.stringify({ run: 'R1', started, machine: machine(), messages: MESSAGES + 1, flights: FLIGHTS, crashFree: clean, chaos, verdict, ok: Object.values(verdict).every(Boolean) }, null, 2));
process.exit(Object.values(verdict).every(Boolean) ? 0 : 1);
