// The browser tests' one way to start headless Chromium: Debian's package at /usr/bin/chromium (.ci/run
// installs it, the README names it). Without it a browser test fails at once with one line that says so,
// never a silent skip: a CI that lost its browser must not pass with the browser tests left out.
import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

const LAUNCH = {
  executablePath: CHROMIUM,
  headless: true,
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-background-networking',
    '--disable-gpu',
    '--no-first-run',
  ],
};

/** Throws one line (no stack to scroll past) when Chromium is missing; call it first in `before`, so no server starts for nothing. */
export function requireChromium(): void {
  if (existsSync(CHROMIUM)) return;
  const error = new Error(
    `Chromium is not installed (no ${CHROMIUM}): the browser tests need it (apt-get install chromium; .ci/run installs it)`,
  );
  error.stack = `Error: ${error.message}`;
  throw error;
}

/** A headless Chromium with fresh contexts per page. */
export async function launchChromium(): Promise<Browser> {
  requireChromium();
  return chromium.launch(LAUNCH);
}

/** A headless Chromium on a profile directory that keeps its storage (localStorage, cookies) across pages. */
export async function launchChromiumProfile(profileDir: string): Promise<BrowserContext> {
  requireChromium();
  return chromium.launchPersistentContext(profileDir, LAUNCH);
}
