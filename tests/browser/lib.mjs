// lib.mjs -- what every browser script shares: Debian's chromium launched
// for a closed network, signing in, checks that name what failed, and a
// run wrapper that collects the page's errors and sets the exit code.

import { chromium } from 'playwright-core';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
// Debian's chromium in a closed network: no sandbox (containers), no GPU,
// and none of its background connections.
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
              '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export function check(ok, what) {
  if (!ok) throw new Error(what);
}

export async function signIn(page, base, token) {
  await page.goto(base + '/');
  await page.getByLabel('API token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** Launch chromium, open a 1280x800 page and run body(page, browser,
 *  errors). errors collects the page's console errors and exceptions; body
 *  decides which are expected. Prints FAILED, saves <shots>/failed.png
 *  (when shots is given) and sets exit code 1 on a throw; always closes the
 *  browser. */
export async function run(body, shots) {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  const errors = [];
  let page = null;
  try {
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', (e) => errors.push(String(e)));
    await body(page, browser, errors);
  } catch (e) {
    console.error(`FAILED: ${e.message}`);
    if (errors.length) console.error(`page errors: ${errors.join('; ')}`);
    if (shots && page) await page.screenshot({ path: `${shots}/failed.png`, fullPage: true }).catch(() => {});
    process.exitCode = 1;
  } finally {
    await browser.close();
  }
}

// Click the button named opener and wait for the dialog it opens.
export async function dialog(page, opener) {
  await page.getByRole('button', { name: opener, exact: true }).click();
  const d = page.getByRole('dialog');
  await d.waitFor();
  return d;
}
