// dashboard.mjs -- a cluster's metric dashboard in Debian's chromium, as an
// operator uses it: real datapoints on the charts, a chart split per node,
// a planned failover marked on every chart and listed, the hot slots, the
// range changed by keyboard, and the page at phone width.
//
//   node dashboard.mjs <base url> <admin token> <cluster id> <nodes> <shards> <screenshot dir>
//
// Exits 0 when every check holds; otherwise prints what failed and exits 1.
// Run by tests/system/test_browser_dashboard.py, which starts the stack, the
// cluster and traffic on it.

import { check, run, signIn } from './lib.mjs';

const [base, adminToken, clusterId, nodes, shards, shots] = process.argv.slice(2);

async function until(what, timeoutMs, probe) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

await run(async (page, _browser, errors) => {
  const drawn = page.locator('.dashboard[data-state="drawn"]');
  const figure = (name) => page.getByRole('figure', { name, exact: true });
  const attr = async (name, a) => Number(await figure(name).getAttribute(a));
  const refresh = async () => {
    await page.getByRole('button', { name: 'Refresh' }).click();
    await drawn.waitFor();
  };

  // From the cluster's page to its metrics.
  await signIn(page, base, adminToken);
  await page.getByRole('table', { name: 'Clusters' }).getByRole('link', { name: clusterId }).click();
  await page.getByRole('link', { name: 'Metrics' }).click();
  await drawn.waitFor();

  // Every chart of the default set is a figure named by its metric, with
  // its unit; the traffic shows as datapoints.
  const names = await page.getByRole('figure').evaluateAll((fs) => fs.map((f) => f.getAttribute('aria-label')));
  check(names.length === 17, `${names.length} charts: ${names.join(', ')}`);
  check(await figure('BytesUsedForCache').getAttribute('data-unit') === 'Bytes', 'BytesUsedForCache has no unit');
  await until('datapoints of GetTypeCmds and CurrConnections', 60000, async () => {
    if (await attr('GetTypeCmds', 'data-points') > 0 && await attr('CurrConnections', 'data-points') > 0) return true;
    await refresh();
    return false;
  });
  check(await attr('GetTypeCmds', 'data-series') === 1, 'GetTypeCmds is not one line across nodes');

  // Maximum across nodes, then one line per node.
  await page.getByLabel('CurrConnections statistic').selectOption('Maximum');
  await until('CurrConnections drawn as Maximum', 10000, async () =>
    (await figure('CurrConnections').locator('.u-legend').textContent()).includes('Maximum'));
  await page.getByLabel('CurrConnections per node').check();
  await until(`CurrConnections per node (${nodes} lines)`, 10000, async () =>
    await attr('CurrConnections', 'data-series') === Number(nodes));
  const legend = await figure('CurrConnections').locator('.u-legend').textContent();
  check(/0001 primary/.test(legend) && /0001 replica/.test(legend), `per-node lines not labelled by shard and role: ${legend}`);
  await figure('CurrConnections').scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${shots}/dashboard-per-node.png` });

  // A planned failover of shard 0001, through the API: its marker appears
  // on the charts and in the list below them.
  const r = await fetch(`${base}/v1/clusters/${encodeURIComponent(clusterId)}/failover`, {
    method: 'POST', body: JSON.stringify({ shard_id: '0001' }),
    headers: { Authorization: `Bearer ${adminToken}`, 'Content-Type': 'application/json' } });
  check(r.status === 202, `failover: ${r.status} ${await r.text()}`);
  await until('the failover marked on the charts', 60000, async () => {
    await refresh();
    return await attr('GetTypeCmds', 'data-markers') > 0 && await attr('CurrConnections', 'data-markers') > 0;
  });
  await page.getByRole('table', { name: 'Events on the charts' }).getByRole('row')
    .filter({ hasText: 'FailoverComplete' }).waitFor();

  // Hot slots: a row per shard.
  const slotRows = page.getByRole('table', { name: 'Hot slots' }).locator('tbody tr');
  await until('the hot slots table', 10000, async () => await slotRows.count() === Number(shards));
  await page.screenshot({ path: `${shots}/dashboard.png`, fullPage: true });

  // Every control has a name; the range changes by keyboard, and the
  // address keeps it.
  const unnamed = await page.locator('.dashboard').evaluate((root) =>
    [...root.querySelectorAll('input, select, button')]
      .filter((el) => !el.labels?.length && !el.getAttribute('aria-label') && !el.textContent.trim())
      .map((el) => el.outerHTML));
  check(unnamed.length === 0, `controls without a name: ${unnamed.join(' ')}`);
  await page.getByLabel('Range', { exact: true }).focus();
  await page.keyboard.press('ArrowDown');
  await until('the 3-hour range in the address', 10000, async () => page.url().includes('range=3h'));
  await drawn.waitFor();
  check(await attr('GetTypeCmds', 'data-points') > 0, 'no GetTypeCmds datapoints over 3 hours');

  // At phone width the charts follow their container.
  await page.setViewportSize({ width: 390, height: 844 });
  await until('charts as wide as a phone', 10000, async () =>
    (await figure('GetTypeCmds').locator('canvas').evaluate((c) => c.getBoundingClientRect().width)) <= 370);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(overflow <= 0, `the page scrolls sideways by ${overflow}px at 390px`);
  await page.screenshot({ path: `${shots}/dashboard-narrow.png`, fullPage: true });

  // No error on the page, CSP violations included (chromium reports them
  // as console errors).
  check(errors.length === 0, `errors on the page: ${errors.join('; ')}`);
  console.log(`ok: ${names.length} charts with datapoints, ${nodes} lines per node, `
    + `the failover marked, ${shards} shards of hot slots`);
});
