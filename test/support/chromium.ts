// Debian's Chromium for the console tests, driven by playwright-core: absent, a test prints
// SKIPPED(no-chromium) (.ci/run installs it).
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Whether Chromium is installed; prints SKIPPED(no-chromium) for `test` when it is not. */
export function chromiumPresent(test: string): boolean {
  const present = existsSync(CHROMIUM);
  if (!present) console.warn(`SKIPPED(no-chromium): ${CHROMIUM} is absent; .ci/run installs Debian's chromium for ${test}`);
  return present;
}

/** Headless, no sandbox (root in CI), no background traffic of its own. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}
