// The ops console signs in with the identity provider, in a real headless Chromium (Debian's,
// driven by playwright-core) against a real OpenID provider (oidc-provider, test/support/oidc.ts)
// and the real api process configured as in production: authorization code + PKCE, tokens in
// the page's memory only, who is signed in and the role shown, only that role's actions offered
// (a viewer: none), sign-out at the provider, and an operator's replay from the page recorded in
// the audit trail with the person's name. Screenshots: test-output/access-console/ (gitignored).
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import type { Browser, Page } from 'playwright-core';
import { chromiumPresent, launchChromium } from '../support/chromium.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIENCE, CONSOLE_CLIENT, productionApiEnv, signingKey, startIdp, type TestIdp } from '../support/oidc.ts';
import { freePort } from '../support/ports.ts';
import { startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { openServices, resetDomain, resetPipeline, type TestServices } from '../support/services.ts';
import { writeTraceFixture, type TraceFixture } from '../support/trace-fixtures.ts';

const present = chromiumPresent('access-console.test.ts');
const OUT = join(import.meta.dirname, '../../test-output/access-console');

let s: TestServices;
let idp: TestIdp;
let api: Proc;
let port: number;
let browser: Browser;
let fx: TraceFixture;

/** A page that reaches only this machine (the provider's pages import a web font) and fails the test on a console error. */
async function newPage(errors: string[]): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.route('**/*', (r) => (new URL(r.request().url()).hostname === '127.0.0.1' ? r.continue() : r.abort()));
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => m.type() === 'error' && new URL(page.url()).port === String(port) && errors.push(`console: ${m.text()}`));
  return page;
}

/** From the console's sign-in button through the provider's login form back to the signed-in console. */
async function signIn(page: Page, login: string): Promise<void> {
  await page.goto(`http://127.0.0.1:${port}/ops`);
  await page.click('#oidc-signin');
  await page.waitForSelector('input[name=login]');
  expect(new URL(page.url()).port).toBe(String(idp.port)); // at the provider now
  await page.fill('input[name=login]', login);
  await page.fill('input[name=password]', 'any password');
  await page.click('button[type=submit]');
  await page
    .waitForFunction(() => document.querySelector('#who')?.textContent?.startsWith('Signed in as'), undefined, { timeout: 15_000 })
    .catch(async (e: Error) => {
      throw new Error(`${e.message}: at ${page.url()}, status "${await page.textContent('#status').catch(() => '?')}"`);
    });
  await page.waitForFunction(() => document.querySelector('#status')?.textContent?.startsWith('loaded'));
  expect(page.url()).toBe(`http://127.0.0.1:${port}/ops`); // the code left the address bar
}

describe.runIf(present)('console sign-in with the identity provider (headless Chromium)', () => {
  beforeAll(async () => {
    s = await openServices();
    await resetPipeline(s);
    await resetDomain(s);
    await sql`truncate access_audit`.execute(s.db);
    fx = await writeTraceFixture(s);
    await s.db.updateTable('proc_state').set({ backfill_abandoned_at: new Date(), backfill_abandoned_reason: 'MISSING_ROW' }).where('msg_id', '=', fx.fdel).execute();
    mkdirSync(OUT, { recursive: true });
    port = await freePort();
    idp = await startIdp({ keys: [await signingKey('k1')], consoleOrigins: [`http://127.0.0.1:${port}`] });
    const keys = join(mkdtempSync(join(tmpdir(), 'msgx-console-')), 'api-keys');
    writeFileSync(keys, '');
    api = startWorker('api', productionApiEnv(idp, keys, { MSGX_HTTP_PORT_API: String(port), MSGX_OIDC_CLIENT_ID: CONSOLE_CLIENT, MSGX_OIDC_RESOURCE: AUDIENCE }));
    await waitFor('api up', async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await stopAll(api ? [api] : []);
    await idp?.stop();
    await s?.close();
  });

  it('a viewer signs in: name and role shown, the views, no action button; tokens in memory only; sign-out ends the session', async () => {
    const errors: string[] = [];
    const page = await newPage(errors);
    await signIn(page, 'alice-viewer');
    expect(await page.textContent('#who')).toBe('Signed in as Alice viewer (viewer)');
    expect(await page.textContent('#counts')).toContain('DEAD 2');
    await page.click('#counts a.chip[data-state="DEAD"]:not([data-reason])');
    await page.waitForSelector('#list tr[data-i]');
    expect(await page.isVisible('#list-actions')).toBe(false);
    expect(await page.$$('#list .pick')).toHaveLength(0);
    expect(await page.$$('button[data-resume], button[data-send]')).toHaveLength(0);
    expect(await page.textContent('#abandoned')).toContain(String(fx.fdel));
    expect(await page.evaluate(() => [sessionStorage.length, localStorage.length, document.cookie])).toEqual([0, 0, '']);
    await page.screenshot({ path: join(OUT, 'viewer.png'), fullPage: true });

    await page.click('#signout');
    await page.click('button[name=logout][value=yes]'); // the provider asks
    await page.waitForURL(`http://127.0.0.1:${port}/ops`);
    await page.waitForSelector('#oidc-signin:not([hidden])');
    expect(await page.isVisible('#who')).toBe(false);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('an operator signs in: the actions are offered, a replay from the page is audited with the name', async () => {
    const errors: string[] = [];
    const page = await newPage(errors);
    await signIn(page, 'bob-operator');
    expect(await page.textContent('#who')).toBe('Signed in as Bob operator (operator)');
    expect(await page.$$('button[data-resume]')).toHaveLength(1);
    await page.click('#counts a.chip[data-state="DEAD"]:not([data-reason])');
    await page.waitForSelector(`#list .pick[data-id="${fx.exhausted}"]`);
    expect(await page.isVisible('#list-actions')).toBe(true);
    await page.screenshot({ path: join(OUT, 'operator.png'), fullPage: true });
    await page.check(`#list .pick[data-id="${fx.exhausted}"]`);
    await page.click('#replay-selected');
    await page.waitForFunction(() => document.querySelector('#action')?.textContent?.startsWith('Replayed 1 message'));
    const row = await waitFor('the audit row', async () => {
      const r = await sql<Record<string, unknown>>`select subject, subject_name, role, route, action, status, touched from access_audit where action = 'replay'`.execute(s.db);
      return r.rows[0];
    });
    expect(row).toEqual({ subject: 'bob-operator', subject_name: 'Bob operator', role: 'operator', route: '/ops/replay', action: 'replay', status: 200, touched: { msgIds: [fx.exhausted] } });
    expect(errors).toEqual([]);
    await page.close();
  });

  it('the console asks for no shared token outside development mode; /ops/config names the provider', async () => {
    const c = (await (await fetch(`http://127.0.0.1:${port}/ops/config`)).json()) as { tokenSignIn: boolean; oidc: Record<string, unknown> };
    expect(c).toMatchObject({ tokenSignIn: false, oidc: { issuer: idp.issuer, clientId: CONSOLE_CLIENT, scopes: 'openid profile email', resource: AUDIENCE } });
    expect(c.oidc.authorizationEndpoint).toBe(`${idp.issuer}/auth`);
    const csp = (await fetch(`http://127.0.0.1:${port}/ops`)).headers.get('content-security-policy')!;
    expect(csp).toContain(`connect-src 'self' ${idp.issuer}`);
  });
});
