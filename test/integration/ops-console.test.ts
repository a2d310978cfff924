// The ops console in a real headless Chromium: it shows the head, a DEAD message with its reason
// and an abandoned backfill, and its replay / resume buttons act through the api.
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { openServices, procRows, putInbox, resetDomain, resetPipeline, sisMessage, type TestServices } from '../support/services.ts';
import { startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { intakeRound } from '../../lib/pipeline/intake.ts';
import { markTerminal } from '../../lib/pipeline/transitions.ts';
import { systemClock } from '../../lib/clock.ts';
import { testConfig } from '../support/env.ts';
import { silentLog } from '../support/services.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const present = existsSync(CHROMIUM);
if (!present) console.warn(`SKIPPED(no-chromium): ${CHROMIUM} is absent; .ci/run installs Debian's chromium for this test`);

let s: TestServices;
let api: Proc;
let browser: Browser;

describe.runIf(present)('ops console (headless Chromium)', () => {
  beforeAll(async () => {
    s = await openServices();
    await resetPipeline(s);
    await resetDomain(s);
    // a DEAD(EXHAUSTED) message, a SKIPPED one, an abandoned backfill; a PENDING head
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push(await putInbox(s.inbox, sisMessage()));
    await intakeRound({ db: s.db, inbox: s.inbox, clock: systemClock, config: testConfig(), log: silentLog });
    await markTerminal(s.db, ids[0], 'DEAD', 'EXHAUSTED(INTERNAL): TypeError: handler bug', new Date(), 'TEST/UPD');
    await markTerminal(s.db, ids[1], 'SKIPPED', 'unsupported', new Date(), 'ZZZZ/UPD');
    await markTerminal(s.db, ids[2], 'SUCCEEDED', null, new Date(), 'TEST/UPD');
    await s.db.updateTable('proc_state').set({ backfill_abandoned_at: new Date(), backfill_abandoned_reason: 'MISSING_ROW' }).where('msg_id', '=', ids[2]).execute();
    api = startWorker('api');
    await waitFor('api up', async () => (await fetch(`http://127.0.0.1:${api.port}/healthz`)).ok);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await stopAll(api ? [api] : []);
    await s?.close();
  });

  it('without a token it says it cannot load; with one it shows head, DEAD reason, abandoned backfill; replay and resume act', async () => {
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${api.port}/ops`);
    await page.fill('#token', 'wrong');
    await page.click('#save');
    await page.waitForSelector('#status .bad');
    expect(await page.textContent('#status')).toContain('cannot load: missing or wrong bearer token');

    await page.fill('#token', 'test-token');
    await page.click('#save');
    await page.waitForFunction(() => document.querySelector('#status')?.textContent?.startsWith('loaded'));
    const rows = await procRows(s.db);
    expect(await page.textContent('#head')).toContain(`message ${rows[3].msg_id} PENDING`);
    const problems = await page.textContent('#problems');
    expect(problems).toContain('EXHAUSTED(INTERNAL): TypeError: handler bug');
    expect(problems).toContain('unsupported');
    expect(await page.textContent('#abandoned')).toContain('MISSING_ROW');
    expect(await page.textContent('#dead')).toContain('none');

    await page.click('#problems button'); // replay the DEAD one (the only row with a button)
    await page.waitForFunction(() => document.querySelector('#action')?.textContent?.startsWith('replay done'));
    expect((await procRows(s.db)).find((r) => r.msg_id === rows[0].msg_id)!.state).toBe('PENDING');

    await page.click('#abandoned button');
    await page.waitForFunction(() => document.querySelector('#action')?.textContent?.startsWith('resume done'));
    expect((await procRows(s.db)).find((r) => r.msg_id === rows[2].msg_id)!.backfill_abandoned_at).toBeNull();
    await page.screenshot({ path: '/tmp/msgx-ops-console.png', fullPage: true });
  });
});
