// Console v2 in a real headless Chromium (Debian's, driven by playwright-core): the
// operator searches a message and reads its trace, opens a flight's timeline (a deleted one and an
// archived one) and asks for its state as of a moment, pages through DEAD messages that more recent SKIPPED ones do not hide, replays a
// DEAD(PROTOCOL) message — cancelled at the confirmation, then confirmed with force — and a
// DEAD(EXHAUSTED) one without any; then the drill's traps: a never-applied (raw-missing) message
// whose resume is refused with the right command, a dead letter's held count and a held event's
// trace, and a request's outcome with the AODB's error text. Screenshots go to test-output/ops-console/ (gitignored). Any
// console error or uncaught exception in the page fails the test.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { chromiumPresent, launchChromium } from '../support/chromium.ts';
import { inboxProcessed, openServices, putInbox, resetDomain, resetPipeline, sisMessage, type TestServices } from '../support/services.ts';
import { createRequest, requestSettings } from '../../lib/requests/outbound.ts';
import { markFailed } from '../../lib/requests/track.ts';
import { TEST_TOPICS, testConfig } from '../support/env.ts';
import { startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { writeTraceFixture, type TraceFixture } from '../support/trace-fixtures.ts';

const present = chromiumPresent('ops-console.test.ts');
const OUT = join(import.meta.dirname, '../../test-output/ops-console');

let s: TestServices;
let api: Proc;
let browser: Browser;
let fx: TraceFixture;
const EXTRA_DEAD = 52; // with the fixture's two: more than one 50-row page
const EXTRA_SKIPPED = 60; // newer than every DEAD one: a shared "recent problems" list would show only these

/** Type a moment into the timeline's "as of" field, ask (button or Enter), and read the answer's summary line. */
async function asOfIn(page: Page, typed: string, key?: 'Enter') {
  const before = await page.textContent('#asof-result');
  await page.fill('#asof', typed);
  if (key === 'Enter') await page.press('#asof', 'Enter');
  else await page.click('#asof-btn');
  await page.waitForFunction((b) => document.querySelector('#asof-result')?.textContent !== b, before);
  return page.textContent('#asof-summary');
}

const stateOf = async (id: number) => (await s.db.selectFrom('proc_state').select('state').where('msg_id', '=', id).executeTakeFirstOrThrow()).state;

describe.runIf(present)('ops console v2 (headless Chromium)', () => {
  beforeAll(async () => {
    s = await openServices();
    await resetPipeline(s);
    await resetDomain(s);
    fx = await writeTraceFixture(s);
    // spread over the last hour (the charts read them): terminal g minutes ago, g * 2 s after enqueue
    const t = new Date();
    await sql`insert into proc_state (msg_id, state, reason, reason_class, kind, enqueued_at, terminal_at, updated_at)
              select 1000 + g, 'DEAD', 'EXHAUSTED(INTERNAL): TypeError: bulk', 'EXHAUSTED', 'FLOP/GATE', ${t}::timestamptz - make_interval(mins => g, secs => 2 * g),
                     ${t}::timestamptz - make_interval(mins => g), ${t}::timestamptz - make_interval(mins => g) from generate_series(1, ${EXTRA_DEAD}) g`.execute(s.db);
    await sql`insert into proc_state (msg_id, state, reason, reason_class, kind, enqueued_at, terminal_at, updated_at)
              select 2000 + g, 'SKIPPED', 'unsupported', 'UNSUPPORTED', 'ZZZZ/UPD', ${t}::timestamptz - make_interval(mins => g % 55, secs => g),
                     ${t}::timestamptz - make_interval(mins => g % 55), ${t}::timestamptz - make_interval(mins => g % 55) from generate_series(1, ${EXTRA_SKIPPED}) g`.execute(s.db);
    await s.db.updateTable('proc_state').set({ backfill_abandoned_at: t, backfill_abandoned_reason: 'MISSING_ROW' }).where('msg_id', '=', fx.fdel).execute();
    mkdirSync(OUT, { recursive: true });
    api = startWorker('api');
    await waitFor('api up', async () => (await fetch(`http://127.0.0.1:${api.port}/healthz`)).ok);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await stopAll(api ? [api] : []);
    await s?.close();
  });

  it('a flight as of a moment when there was no state: not created yet, purged, a bad moment', async () => {
    const page = await browser.newPage(); // the 404s and 400s are logged by the browser: this page is not the error-checked one
    await page.goto(`http://127.0.0.1:${api.port}/ops`);
    await page.fill('#token', 'test-token');
    await page.click('#save');
    await page.waitForFunction(() => document.querySelector('#status')?.textContent?.startsWith('loaded'));
    await page.fill('#q', '16');
    await page.click('#timeline-btn');
    await page.waitForSelector('#asof');
    expect(await asOfIn(page, '2026-12-01 08:29')).toBe('No state: flight 16 did not exist yet at 2026-12-01T08:29:00+08:00: it was created at 2026-12-01T08:30:00+08:00');
    expect(await asOfIn(page, '2026-12-01 08:45')).toContain('flight 16 was version 3 (DELETED)'); // a deleted state is shown, marked
    expect(await page.getAttribute('#asof-summary', 'class')).toBe('bad');
    expect(await asOfIn(page, 'yesterday')).toMatch(/^Cannot read the state: asOf must be an ISO-8601 time with a zone offset/);
    await page.fill('#q', '99');
    await page.click('#timeline-btn');
    await page.waitForFunction(() => document.querySelector('#timeline-summary')?.textContent?.startsWith('Flight 99 '));
    expect(await asOfIn(page, '2026-12-01 09:30')).toBe(
      'No state: flight 99 was not held at 2026-12-01T09:30:00+08:00: it was purged to history at 2026-12-01T09:00:00+08:00 (rule DELETED, version 2)',
    );
    await page.close();
  });

  it('a wrong token says it cannot load; the token is not put in the URL', async () => {
    const page = await browser.newPage(); // 401s are logged by the browser: this page is not the error-checked one
    await page.goto(`http://127.0.0.1:${api.port}/ops`);
    await page.fill('#token', 'wrong');
    await page.click('#save');
    await page.waitForSelector('#status .bad');
    expect(await page.textContent('#status')).toContain('cannot load: missing or wrong bearer token');
    expect(page.url()).toBe(`http://127.0.0.1:${api.port}/ops`);
    await page.close();
  });

  it('search, trace, timeline, paged DEAD list, replay with and without the confirmation; no console error', async () => {
    const page: Page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors: string[] = [];
    page.on('console', (m) => m.type() === 'error' && errors.push(`console: ${m.text()}`));
    page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
    // Under the Content-Security-Policy the api itself sends (helmet, lib/api/hardening.ts): no
    // inline script, style or handler is allowed, and a violation is reported as a console error.
    await page.addInitScript(() => document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`)));
    const urls: string[] = [];
    page.on('request', (r) => urls.push(r.url()));
    const res = await page.goto(`http://127.0.0.1:${api.port}/ops`);
    const csp = res!.headers()['content-security-policy'];
    expect(csp).toContain("default-src 'none'");
    expect(csp).toMatch(/script-src 'self'(;|$)/);
    expect(csp).toMatch(/style-src 'self'(;|$)/);
    expect(csp).not.toContain('unsafe-');
    await page.fill('#token', 'test-token');
    await page.click('#save');
    await page.waitForFunction(() => document.querySelector('#status')?.textContent?.startsWith('loaded'));
    expect(await page.textContent('#status')).toMatch(/loaded \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+08:00 \(airport time, Asia\/Shanghai\)/);
    expect(page.url()).not.toContain('token');
    // the token is in the page's memory only: no storage, no cookie
    expect(await page.evaluate(() => [sessionStorage.length, localStorage.length, document.cookie])).toEqual([0, 0, '']);

    // counts per state and reason: DEAD first, its reasons each a link
    const counts = await page.textContent('#counts');
    expect(counts).toContain(`DEAD ${EXTRA_DEAD + 2}`);
    expect(counts).toContain(`SKIPPED ${EXTRA_SKIPPED + 1}`);
    expect(counts).toContain(`EXHAUSTED(INTERNAL) ${EXTRA_DEAD + 1}`);
    const deadBg = await page.$eval('.chip.st-DEAD', (e) => getComputedStyle(e).backgroundColor);
    const skippedBg = await page.$eval('.chip.st-SKIPPED', (e) => getComputedStyle(e).backgroundColor);
    expect(deadBg).not.toBe(skippedBg);

    // search a message: its trace, readable
    await page.fill('#q', String(fx.stand));
    await page.click('#trace-btn');
    await page.waitForSelector('#trace-summary');
    const summary = await page.textContent('#trace-summary');
    expect(summary).toContain(`Message ${fx.stand} (FLOP/STND) was received 2026-12-01 08:30:00 +08:00; it is SUCCEEDED since 2026-12-01 08:36:00 +08:00, after 2 failed attempts.`);
    expect(summary).toContain('It changed 2 flight versions (16, 17) and produced 3 events, 1 sent.');
    const flights = await page.textContent('#trace-flights');
    expect(flights).toContain('Flight 16 version 2 — UPDATE at 2026-12-01 08:35:00 +08:00');
    expect(flights).toMatch(/STND\s*504\s*21/);
    expect(flights).toContain('(MAFL)');
    expect(await page.textContent('#trace-attempts')).toContain('TypeError: boom again');
    expect(await page.textContent('#trace-events')).toMatch(new RegExp(`${TEST_TOPICS.MSGX_KAFKA_MSG_TOPIC.replaceAll('.', '\\.')}\\s*16\\s*2\\s*change\\s*SENT\\s*2\\s*41`));
    await page.screenshot({ path: join(OUT, '1-trace.png'), fullPage: true });

    // the FDEL's trace: the delete and its tombstone
    await page.fill('#q', String(fx.fdel));
    await page.press('#q', 'Enter');
    await page.waitForFunction((id) => document.querySelector('#trace-summary')?.textContent?.startsWith(`Message ${id} `), fx.fdel);
    expect(await page.textContent('#trace-flights')).toContain('Flight 16 version 3 — DELETE');
    expect(await page.textContent('#trace-events')).toContain('tombstone (delete)');

    // open flight 16's timeline from the trace
    await page.click('#trace-flights a[data-flid="16"]');
    await page.waitForSelector('#timeline-summary');
    expect(await page.textContent('#timeline-summary')).toContain('Flight 16 is DELETED, version 3, operation day 2026-12-01');
    const versions = await page.textContent('#timeline-versions');
    expect(versions).toMatch(/1\s*CREATE.*SCHD\/DNLD/s);
    expect(versions).toMatch(/2\s*UPDATE.*FLOP\/STND.*STND: 504 → 21/s);
    expect(versions).toMatch(/3\s*DELETE.*FLOP\/FDEL.*STATE: ACTIVE → DELETED/s);
    await page.screenshot({ path: join(OUT, '2-timeline.png'), fullPage: true });

    // the flight as of a moment: typed in airport time (or ISO with offset), answered by GET /flights/16?asOf=
    const asOf = (typed: string, key?: 'Enter') => asOfIn(page, typed, key);
    expect(await asOf('2026-12-01 08:36')).toBe(
      `As of 2026-12-01 08:36:00 +08:00 flight 16 was version 2 (ACTIVE), held since 2026-12-01 08:35:00 +08:00 until 2026-12-01 08:40:00 +08:00, made by message ${fx.stand} (FLOP/STND, UPDATE).`,
    );
    expect(await page.textContent('#asof-fields')).toMatch(/STND\s*21/);
    expect(await page.textContent('#asof-fields')).toMatch(/FLNO\s*YG9061/);
    await page.screenshot({ path: join(OUT, '2b-as-of.png'), fullPage: true });
    expect(await asOf('2026-12-01 08:35:00', 'Enter')).toContain('flight 16 was version 2'); // exactly at the change: the state after it
    expect(await asOf('2026-12-01T08:34:59+08:00')).toContain(
      `flight 16 was version 1 (ACTIVE), held since 2026-12-01 08:30:00 +08:00 until 2026-12-01 08:35:00 +08:00, made by message ${fx.create} (SCHD/DNLD, CREATE)`,
    );
    expect(await page.textContent('#asof-fields')).toMatch(/STND\s*504/);
    expect(await asOf('2026-12-01T00:45:00Z')).toContain('flight 16 was version 3 (DELETED), held since 2026-12-01 08:40:00 +08:00 (still the current version)');

    // an archived flight, by search
    await page.fill('#q', '99');
    await page.click('#timeline-btn');
    await page.waitForFunction(() => document.querySelector('#timeline-summary')?.textContent?.startsWith('Flight 99 '));
    expect(await page.textContent('#timeline-summary')).toContain(
      'Flight 99 is ARCHIVED: purged, its last state is in the history store. Archived version 2 (DELETED, rule DELETED) at 2026-12-01 09:00:00 +08:00.',
    );
    expect(await page.textContent('#timeline-versions')).toContain('DELETE (SNAPSHOT_DELETE)');
    // as of a moment: from the archived state and its change records; after the purge, none
    expect(await asOf('2026-12-01 08:35')).toContain(`flight 99 was version 1 (ACTIVE), held since 2026-12-01 08:30:00 +08:00 until 2026-12-01 08:40:00 +08:00, made by message ${fx.create}`);
    expect(await page.textContent('#asof-fields')).toMatch(/STATE\s*ACTIVE\s*STATE_VERSION\s*1/); // (the fixture's archived state holds only the envelope)

    // every DEAD message is listed, page by page, although 61 SKIPPED ones are more recent
    await page.click('#counts a.chip[data-state="DEAD"]:not([data-reason])');
    await page.waitForFunction(() => document.querySelector('#page-info')?.textContent?.startsWith('page 1'));
    expect(await page.$$eval('#list tr.st-DEAD', (r) => r.length)).toBe(50);
    expect(await page.$$eval('#list tr.st-SKIPPED', (r) => r.length)).toBe(0);
    await page.click('#next-page');
    await page.waitForFunction(() => document.querySelector('#page-info')?.textContent?.startsWith('page 2'));
    expect(await page.$$eval('#list tr.st-DEAD', (r) => r.length)).toBe(EXTRA_DEAD + 2 - 50);
    expect(await page.textContent('#page-info')).toContain('(last page)');

    // DEAD(PROTOCOL): the replay asks first and says what force means; cancel replays nothing
    await page.click('#counts a.chip[data-state="DEAD"][data-reason="PROTOCOL"]');
    await page.waitForFunction(() => document.querySelector('#list-title')?.textContent === 'List: DEAD · PROTOCOL');
    await page.check(`#list input.pick[data-id="${fx.protocol}"]`);
    await page.click('#replay-selected');
    await page.waitForSelector('#confirm:not([hidden])');
    const ask = await page.textContent('#confirm-text');
    expect(ask).toContain(`The selected message (${fx.protocol}) is DEAD(MALFORMED/PROTOCOL)`);
    expect(ask).toContain('Replaying with force sends the same inbox text through the decoder and the handlers again');
    expect(ask).toContain('goes DEAD again with the same reason');
    await page.screenshot({ path: join(OUT, '3-confirm-force.png'), fullPage: true });
    await page.click('#confirm-cancel');
    await page.waitForFunction(() => document.querySelector('#action')?.textContent?.startsWith('Nothing was replayed'));
    expect(await page.textContent('#action')).toBe(`Nothing was replayed: you cancelled, so 1 message (${fx.protocol}) stays DEAD.`);
    expect(await stateOf(fx.protocol)).toBe('DEAD');

    // ... and confirming replays it with force
    await page.check(`#list input.pick[data-id="${fx.protocol}"]`);
    await page.click('#replay-selected');
    await page.waitForSelector('#confirm:not([hidden])');
    await page.click('#confirm-force');
    await page.waitForFunction(() => document.querySelector('#action')?.textContent?.startsWith('Replayed'));
    expect(await page.textContent('#action')).toBe(`Replayed 1 message (${fx.protocol}): back to PENDING, the pump applies it again in inbox order (with force).`);
    expect(await stateOf(fx.protocol)).toBe('PENDING');

    // DEAD(EXHAUSTED), bulk: the whole second page selected and replayed at once, no confirmation needed
    await page.click('#counts a.chip[data-state="DEAD"][data-reason="EXHAUSTED(INTERNAL)"]');
    await page.waitForFunction(() => document.querySelector('#list-title')?.textContent === 'List: DEAD · EXHAUSTED(INTERNAL)');
    await page.click('#next-page');
    await page.waitForFunction(() => document.querySelector('#page-info')?.textContent?.startsWith('page 2, 3 messages'));
    await page.click('#select-all');
    expect(await page.textContent('#selected-count')).toBe('3 messages selected');
    await page.click('#replay-selected');
    await page.waitForFunction(() => document.querySelector('#action')?.textContent?.startsWith('Replayed 3 messages'));
    expect(await page.textContent('#action')).toBe(`Replayed 3 messages (${fx.exhausted}, 1001, 1002): back to PENDING, the pump applies them again in inbox order.`);
    expect(await page.isHidden('#confirm')).toBe(true);
    expect(await stateOf(fx.exhausted)).toBe('PENDING');
    expect(await stateOf(1001)).toBe('PENDING');
    expect(await stateOf(1003)).toBe('DEAD');

    // resume an abandoned backfill: the result as a sentence
    await page.waitForSelector(`#abandoned button[data-resume="${fx.fdel}"]`);
    await page.click(`#abandoned button[data-resume="${fx.fdel}"]`);
    await page.waitForFunction(() => document.querySelector('#action')?.textContent?.startsWith('Backfill of message'));
    expect(await page.textContent('#action')).toBe(`Backfill of message ${fx.fdel} resumed: the processing time will be written back on the next round.`);

    // charts of the last hour, inline SVG from Postgres
    await page.waitForFunction(() => document.querySelector('#charts-time')?.textContent?.includes('airport time'));
    expect(await page.textContent('#charts-time')).toMatch(/\+08:00 – .*\+08:00, airport time/);
    for (const id of ['chart-backlog', 'chart-latency', 'chart-dispatch']) expect(await page.$$eval(`#${id} polyline, #${id} circle`, (x) => x.length), id).toBeGreaterThan(0);
    expect(await page.$$eval('#chart-applied rect', (x) => x.length)).toBeGreaterThan(50);
    expect(await page.textContent('#legend-applied')).toContain('DEAD');
    await page.screenshot({ path: join(OUT, '4-console.png'), fullPage: true });

    expect(errors).toEqual([]);
    // the token went only into the Authorization header: no URL the page asked for carries it
    expect(urls.length).toBeGreaterThan(10);
    expect(urls.filter((u) => u.includes('test-token'))).toEqual([]);
  });

  it('raw-missing counted apart and its resume refused with the command; held counts; held events; request outcomes', async () => {
    const raw = await putInbox(s.inbox, sisMessage());
    const t = new Date();
    await sql`insert into proc_state (msg_id, state, reason, reason_class, kind, enqueued_at, terminal_at, updated_at, backfill_abandoned_at, backfill_abandoned_reason)
              values (${raw}, 'DEAD', 'MALFORMED: raw-missing', 'RAW_MISSING', null, ${t}, ${t}, ${t}, ${t}, 'MISSING_ROW')`.execute(s.db);
    // flight 17's first msg event DEAD: its version-2 event (made by fx.stand) is held behind it
    const first = (await sql<{ event_id: string }>`select event_id from msg_event where flid = '17' and target = 'msg' order by event_id limit 1`.execute(s.db)).rows[0].event_id;
    await sql`update msg_event set state = 'DEAD', sent_at = null, attempts = 5, last_error = 'KafkaJSProtocolError: The request included a message larger than the max message size the server will accept' where event_id = ${first}`.execute(
      s.db,
    );
    await sql`truncate req_track`.execute(s.db);
    const settings = requestSettings(testConfig());
    const { request } = await createRequest(s.db, { ...settings, now: t, spec: { kind: 'RQRD', rtype: 'SLST' }, enqueue: false });
    await markFailed(s.db, request.id, 4711, 'EROR 17: reference type SLST unknown', t);

    const page: Page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors: string[] = [];
    page.on('console', (m) => m.type() === 'error' && errors.push(`console: ${m.text()}`));
    page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
    await page.goto(`http://127.0.0.1:${api.port}/ops`);
    await page.fill('#token', 'test-token');
    await page.click('#save');
    await page.waitForFunction(() => document.querySelector('#status')?.textContent?.startsWith('loaded'));

    // raw-missing is its own reason class
    expect(await page.textContent('#counts')).toContain('raw-missing 1');
    expect(await page.$$eval('#counts a.chip[data-reason="MALFORMED"]', (x) => x.length)).toBe(0);

    // the abandoned backfill says what it is; resume refuses with the command that recovers it
    const row = await page.$eval(`#abandoned button[data-resume="${raw}"]`, (b) => b.closest('tr')!.textContent);
    expect(row).toContain('never applied (raw-missing)');
    await page.click(`#abandoned button[data-resume="${raw}"]`);
    await page.waitForFunction(() => document.querySelector('#action')?.textContent?.startsWith('Backfill of message'));
    const said = await page.textContent('#action');
    expect(said).toContain(`Backfill of message ${raw} was not resumed: ${raw}: never applied`);
    expect(said).toContain(`npm run replay -- ${raw} --force`);
    expect((await inboxProcessed(s.inbox)).get(raw)).toBeNull();
    expect((await s.db.selectFrom('proc_state').select('backfill_abandoned_reason').where('msg_id', '=', raw).executeTakeFirstOrThrow()).backfill_abandoned_reason).toBe('MISSING_ROW');

    // the dead letter shows how many events it holds; the held event's trace names it, not a stale error
    const cells = await page.$$eval('#dead tr', (trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent)));
    const heldAt = cells[0].indexOf('held');
    expect(heldAt).toBeGreaterThan(0);
    const heldCell = cells.find((c) => c[0] === String(first))![heldAt];
    expect(heldCell).toBe('1');
    await page.fill('#q', String(fx.stand));
    await page.click('#trace-btn');
    await page.waitForSelector('#trace-events');
    expect(await page.textContent('#trace-events')).toContain(`waiting behind DEAD event ${first} of flight 17`);

    // the request's outcome with the AODB's error text
    const requests = await page.textContent('#recent-requests');
    expect(requests).toContain('FAILED');
    expect(requests).toContain('EROR 17: reference type SLST unknown');
    await page.screenshot({ path: join(OUT, '5-drill.png'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });
});
