// snapshots.mjs -- backups in the console, in Debian's chromium, as a user
// does them: a cluster's automatic snapshots set in Modify (a refused
// window shown next to its field), a snapshot taken from its page (a
// refused name first) and seen becoming available on #/snapshots, the
// list filtered by cluster, the snapshot restored into a new cluster of
// two shards through the dialog, its deletion refused while the restore
// runs (the API's detail shown), the restored cluster deleted with a final
// snapshot that holds the same keys, both snapshots deleted; a read token
// sees the snapshots and no button that changes them. A screenshot of each
// page goes to <screenshot dir>.
//
//   node snapshots.mjs <base url> <admin token> <read token> <cluster id> <keys> <snapshot window> <screenshot dir>
//
// Run by tests/system/test_browser_snapshots.py, which starts the stack and
// the cluster, with <keys> keys in it, and chooses a snapshot window that
// opens no automatic snapshot while the test runs.

import { check, dialog, run, signIn } from './lib.mjs';

const [base, adminToken, readToken, source, keys, snapshotWindow, shots] = process.argv.slice(2);
const SNAP = 'web-snap';
const COPY = 'web-copy';
const FINAL = 'web-final';
const KEYS = Number(keys).toLocaleString('en-US');
const shot = (page, name) => page.screenshot({ path: `${shots}/${name}.png`, fullPage: true });

const snapshotRow = (page, name) =>
  page.getByRole('table', { name: 'Snapshots' }).getByRole('row').filter({ hasText: name });

await run(async (page, browser, errors) => {
  await signIn(page, base, adminToken);
  await page.getByRole('table', { name: 'Clusters' }).waitFor();
  await page.goto(`${base}/#/clusters/${source}`);
  await page.getByRole('heading', { level: 1, name: new RegExp(source) }).waitFor();
  await page.getByText('Automatic snapshots: none').waitFor();

  // Automatic snapshots in Modify: a window under an hour is refused next
  // to its field; a good one and a retention are previewed and applied.
  let d = await dialog(page, 'Modify');
  await d.getByLabel('Snapshot retention (days)').fill('7');
  await d.getByLabel('Snapshot window (UTC)').fill('02:00-02:30');
  await d.getByRole('button', { name: 'Preview' }).click();
  await d.locator('[data-field="snapshot_window"] .field-error').filter({ hasText: /./ }).waitFor();
  await d.getByLabel('Snapshot window (UTC)').fill(snapshotWindow);
  await d.getByRole('button', { name: 'Preview' }).click();
  await d.getByText(/Would change: .*snapshot_retention_days/).waitFor();
  await d.getByText('In effect at once, no operation.').waitFor();
  await d.getByRole('button', { name: 'Apply changes' }).click();
  await d.waitFor({ state: 'detached' });
  await page.getByText(`Automatic snapshots: daily in ${snapshotWindow} UTC, each kept 7 days`).waitFor();

  // Take snapshot: a name that is no name is refused next to its field;
  // then the snapshot is listed on the page, linked.
  d = await dialog(page, 'Take snapshot');
  await d.getByLabel('Snapshot name').fill('Web_Snap');
  await d.getByRole('button', { name: 'Take snapshot' }).click();
  await d.locator('[data-field="name"] .field-error').filter({ hasText: /./ }).waitFor();
  await d.getByLabel('Snapshot name').fill(SNAP);
  await shot(page, 'snapshot-take');
  await d.getByRole('button', { name: 'Take snapshot' }).click();
  await d.waitFor({ state: 'detached' });
  await snapshotRow(page, SNAP).getByRole('link', { name: SNAP }).waitFor();

  // #/snapshots follows it until it is available, with its keys.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Snapshots' }).click();
  await page.getByRole('heading', { level: 1, name: 'Snapshots' }).waitFor();
  await snapshotRow(page, SNAP).filter({ hasText: 'available' }).waitFor({ timeout: 30000 });
  const listed = await snapshotRow(page, SNAP).textContent();
  check(listed.includes(source) && listed.includes('manual') && listed.includes(KEYS),
    `the row does not show the cluster, source and ${KEYS} keys: ${listed}`);
  await shot(page, 'snapshots');

  // Filtered by cluster: another id shows none, the source's shows it.
  await page.getByLabel('Cluster').fill('nope');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.getByText('No snapshots of nope.').waitFor();
  await page.getByLabel('Cluster').fill(source);
  await page.getByRole('button', { name: 'Filter' }).click();
  await snapshotRow(page, SNAP).waitFor();

  // The snapshot's page: its shard with its keys.
  await snapshotRow(page, SNAP).getByRole('link', { name: SNAP }).click();
  await page.getByRole('heading', { level: 1, name: new RegExp(SNAP) }).waitFor();
  const shard = page.getByRole('table', { name: 'Shards' }).getByRole('row').filter({ hasText: '0001' });
  check((await shard.textContent()).includes(KEYS), `shard 0001 does not hold ${KEYS} keys`);
  await shot(page, 'snapshot');

  // Restore into a new cluster of two shards; its page opens, and says
  // where its data came from.
  d = await dialog(page, 'Restore');
  await d.getByLabel('New cluster ID').fill(COPY);
  await d.getByLabel('Shards').fill('2');
  await shot(page, 'snapshot-restore');
  await d.getByRole('button', { name: 'Restore' }).click();
  await page.getByRole('heading', { level: 1, name: new RegExp(COPY) }).waitFor();
  const from = page.getByRole('region', { name: 'Summary' }).locator('a[href^="#/snapshots/"]');
  await from.click();

  // While the restore runs, the snapshot cannot be deleted: the API's
  // detail says why.
  await page.getByRole('heading', { level: 1, name: new RegExp(SNAP) }).waitFor();
  d = await dialog(page, 'Delete');
  await d.getByRole('button', { name: 'Delete snapshot' }).click();
  await d.getByRole('alert').filter({ hasText: 'being restored' }).waitFor();
  await shot(page, 'snapshot-delete-refused');
  await d.getByRole('button', { name: 'Cancel' }).click();
  await d.waitFor({ state: 'detached' });

  await page.goto(`${base}/#/clusters/${COPY}`);
  await page.getByRole('heading', { level: 1, name: new RegExp(`${COPY} available`) }).waitFor({ timeout: 60000 });
  check(await page.getByRole('region', { name: /^Shard / }).count() === 2, 'the restored cluster has not two shards');

  // A read token, in a tab of its own: the snapshots, and no button.
  const reader = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  reader.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  reader.on('pageerror', (e) => errors.push(String(e)));
  await signIn(reader, base, readToken);
  await reader.getByRole('table', { name: 'Clusters' }).waitFor();
  await reader.goto(`${base}/#/snapshots`);
  await snapshotRow(reader, SNAP).filter({ hasText: 'available' }).waitFor();
  await reader.getByText('This token has read scope').waitFor();
  check(await reader.getByRole('button', { name: /Restore|Delete/ }).count() === 0, 'read token sees Restore or Delete');
  await shot(reader, 'snapshots-read-only');
  await snapshotRow(reader, SNAP).getByRole('link', { name: SNAP }).click();
  await reader.getByRole('heading', { level: 1, name: new RegExp(SNAP) }).waitFor();
  check(await reader.getByRole('button', { name: /Restore|Delete/ }).count() === 0, 'read token sees Restore or Delete on the snapshot');
  await reader.goto(`${base}/#/clusters/${source}`);
  await reader.getByRole('table', { name: 'Snapshots' }).getByRole('link', { name: SNAP }).waitFor();
  check(await reader.getByRole('button', { name: 'Take snapshot' }).count() === 0, 'read token sees Take snapshot');
  await reader.close();

  // Delete the restored cluster after a final snapshot, which keeps what
  // the restore put in it: the source's keys.
  d = await dialog(page, 'Delete');
  await d.getByLabel('Final snapshot').fill(FINAL);
  await d.getByLabel(`Type ${COPY} to confirm`).fill(COPY);
  await shot(page, 'delete-final-snapshot');
  await d.getByRole('button', { name: 'Delete cluster' }).click();
  await page.getByText(`Cluster ${COPY} does not exist`).waitFor({ timeout: 60000 });
  await page.getByRole('link', { name: 'Its snapshots' }).click();
  const final = snapshotRow(page, FINAL);
  await final.filter({ hasText: 'available' }).waitFor();
  const finalText = await final.textContent();
  check(finalText.includes('final') && finalText.includes(KEYS), `the final snapshot is not final with ${KEYS} keys: ${finalText}`);

  // Both snapshots deleted from the list.
  for (const [name, filter] of [[FINAL, COPY], [SNAP, source]]) {
    await page.goto(`${base}/#/snapshots?cluster_id=${filter}`);
    await page.getByRole('button', { name: `Delete ${name}` }).click();
    d = page.getByRole('dialog');
    await d.getByRole('button', { name: 'Delete snapshot' }).click();
    await d.waitFor({ state: 'detached' });
    await page.getByText(`No snapshots of ${filter}.`).waitFor({ timeout: 30000 });
  }

  // The refusals above logged the API's 400 and 409, and pages of deleted
  // things its 404: nothing else may have gone wrong.
  const unexpected = errors.filter((e) => !/status of 40[0-9]/.test(e));
  check(unexpected.length === 0, `errors on the page: ${unexpected.join('; ')}`);
  console.log(`ok: set automatic snapshots, took ${SNAP} (${KEYS} keys), restored it into ${COPY} (2 shards), ` +
    `deleted ${COPY} with ${FINAL}, deleted both; read token read-only`);
}, shots);
