// console.mjs -- drives Debian's chromium through the web console, as a
// user would, and saves a screenshot of each page it checks.
//
//   node console.mjs <base url> <admin token> <cluster id> <screenshot dir>
//
// Exits 0 when every check holds; otherwise prints what failed and exits 1.
// Run by tests/system/test_browser.py, which starts the stack and a cluster.

import { check, run, signIn as signInAt } from './lib.mjs';

const [base, adminToken, clusterId, shots] = process.argv.slice(2);
const signIn = (page, token) => signInAt(page, base, token);

await run(async (page, _browser, errors) => {
  // A wrong token is refused on the page, and kept nowhere.
  await signIn(page, 'cairn_000000000000_not-a-token-at-all-not-a-token-at-all-xyz');
  await page.getByRole('alert').filter({ hasText: 'not valid' }).waitFor();
  check(await page.evaluate(() => sessionStorage.length) === 0, 'a refused token was kept');
  await page.screenshot({ path: `${shots}/signin-refused.png` });

  // Signed in: the clusters list shows the cluster, available.
  await signIn(page, adminToken);
  const table = page.getByRole('table', { name: 'Clusters' });
  await table.getByRole('link', { name: clusterId }).waitFor();
  const row = table.getByRole('row').filter({ hasText: clusterId });
  check((await row.textContent()).includes('available'), 'the cluster is not shown available');
  await page.screenshot({ path: `${shots}/clusters.png`, fullPage: true });

  // A filter that matches nothing says so; clearing it shows the cluster again.
  await page.getByLabel('Status').selectOption('deleting');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.getByText('No clusters match.').waitFor();
  await page.getByLabel('Status').selectOption('');
  await page.getByRole('button', { name: 'Filter' }).click();
  await table.getByRole('link', { name: clusterId }).waitFor();

  // The cluster's page: summary, endpoints and a section per shard.
  await table.getByRole('link', { name: clusterId }).click();
  await page.getByRole('heading', { level: 1, name: new RegExp(clusterId) }).waitFor();
  check(await page.getByRole('region', { name: 'Summary' }).isVisible(), 'no summary');
  const shards = await page.getByRole('region', { name: /^Shard / }).count();
  check(shards >= 1, `no shard sections (${shards})`);
  const ops = page.getByRole('table', { name: 'Operations' });
  await ops.getByRole('row').filter({ hasText: 'create' }).filter({ hasText: 'succeeded' }).waitFor();
  const evs = page.getByRole('table', { name: 'Events' });
  await evs.getByRole('row').filter({ hasText: 'ClusterAvailable' }).waitFor();
  await page.screenshot({ path: `${shots}/cluster.png`, fullPage: true });

  // Hostile addresses: a bad escape and markup in the id are shown as text.
  for (const [id, says] of [['%ff', 'Cluster %ff does not exist'],
    ['<img src=x onerror=alert(1)>', 'Cluster <img src=x onerror=alert(1)> does not exist'],
    ['a%00b', 'the path holds a control character']]) {
    await page.goto(`${base}/#/clusters/${id}`);
    await page.getByText(says).waitFor();
    check(await page.locator('main img').count() === 0, `markup from the address ran: ${id}`);
  }
  await page.goto(`${base}/#/clusters`);

  // Sign-out forgets the token: the sign-in form is back.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('API token').waitFor();
  check(await page.evaluate(() => sessionStorage.length) === 0, 'sign-out kept the token');

  // Narrow, as on a phone: the list still reads.
  await signIn(page, adminToken);
  await page.setViewportSize({ width: 390, height: 844 });
  await table.getByRole('link', { name: clusterId }).waitFor();
  await page.screenshot({ path: `${shots}/clusters-narrow.png`, fullPage: true });
  await table.getByRole('link', { name: clusterId }).click();
  await page.getByRole('region', { name: 'Summary' }).waitFor();
  const wide = await page.evaluate(() => document.documentElement.scrollWidth);
  check(wide <= 390, `the cluster's page is ${wide} px wide on a 390 px window`);
  await page.screenshot({ path: `${shots}/cluster-narrow.png`, fullPage: true });

  // The refused token and the hostile addresses above logged the API's 401,
  // 404 and 400, which the browser reports as errors; nothing else may have
  // gone wrong on the pages.
  const unexpected = errors.filter((e) => !/status of 40[014]/.test(e));
  check(unexpected.length === 0, `errors on the page: ${unexpected.join('; ')}`);
  console.log(`ok: signed in, listed, filtered, opened ${clusterId} (${shards} shards), signed out`);
}, shots);
