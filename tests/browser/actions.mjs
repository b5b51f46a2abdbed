// actions.mjs -- the console's forms and actions in Debian's chromium, as
// a user does them: a create refused next to its field and then accepted
// and followed to available, a modify previewed and applied, a test
// failover, an engine upgrade previewed (its checks) and started, a
// typed-confirmation delete; a read token sees no action; the fleet and
// tokens pages. A screenshot of each page goes to <screenshot dir>.
//
//   node actions.mjs <base url> <admin token> <read token> <redis group id> <screenshot dir>
//
// Run by tests/system/test_browser_actions.py, which starts the stack and
// the redis 7.0 group to upgrade.

import { check, dialog, run, signIn as signInAt } from './lib.mjs';

const [base, adminToken, readToken, groupId, shots] = process.argv.slice(2);
const signIn = (page, token) => signInAt(page, base, token);
const NEW = 'web-made';
const shot = (page, name) => page.screenshot({ path: `${shots}/${name}.png`, fullPage: true });

async function waitOperation(page, kind, status, timeout = 90000) {
  const ops = page.getByRole('table', { name: 'Operations' });
  await ops.getByRole('row').filter({ hasText: kind }).filter({ hasText: status }).first()
    .waitFor({ timeout });
}

await run(async (page, _browser, errors) => {
  await signIn(page, adminToken);
  await page.getByRole('table', { name: 'Clusters' }).waitFor();

  // Sizing on the create page: a refusal next to its field, then options,
  // and Use fills the form with the option's shape.
  await page.getByRole('link', { name: 'Create cluster' }).click();
  await page.getByText('Size it from your workload').click();
  const sizing = page.getByRole('form', { name: 'Size from your workload' });
  await sizing.getByLabel('Reads (share)').fill('2');
  await sizing.getByRole('button', { name: 'Suggest sizes' }).click();
  await sizing.locator('[data-field="read_ratio"] .field-error').filter({ hasText: /./ }).waitFor();
  await sizing.getByLabel('Reads (share)').fill('0.8');
  await sizing.getByLabel('Dataset (GiB)').fill('0.1');
  await sizing.getByLabel('Peak requests/s').fill('200');
  await sizing.getByRole('button', { name: 'Suggest sizes' }).click();
  const options = sizing.getByRole('table', { name: 'Sizing options' });
  await options.waitFor();
  check(await options.getByRole('row').count() > 1, 'no sizing option');
  await shot(page, 'sizing-options');
  await options.getByRole('button', { name: 'Use option 1' }).click();
  check(await page.getByLabel('Node type').inputValue() === 'cache.t3.micro',
    `the option did not fill the node type: ${await page.getByLabel('Node type').inputValue()}`);
  check(await page.getByLabel('Replicas per shard').inputValue() === '1', 'replicas not filled');

  // Create: a bad maintenance window is refused next to its field.
  await page.getByLabel('Cluster ID').fill(NEW);
  const price = page.locator('output.price');
  check(/a month/.test(await price.textContent()), `no price estimate: ${await price.textContent()}`);
  await page.getByLabel('Maintenance window (UTC)').fill('someday');
  await page.getByRole('button', { name: 'Create cluster' }).click();
  const windowField = page.locator('[data-field="maintenance_window"] .field-error');
  await windowField.filter({ hasText: /./ }).waitFor();
  check(await page.getByLabel('Maintenance window (UTC)').getAttribute('aria-invalid') === 'true',
    'the refused field is not marked invalid');
  await shot(page, 'create-refused');

  // Fixed, it is accepted and followed until available.
  await page.getByLabel('Maintenance window (UTC)').fill('sun:05:00-sun:06:00');
  await page.getByLabel('Shards').fill('2');
  await page.getByRole('button', { name: 'Create cluster' }).click();
  await page.getByRole('heading', { level: 1, name: new RegExp(NEW) }).waitFor();
  await page.getByRole('heading', { level: 1 }).filter({ hasText: 'available' }).waitFor({ timeout: 90000 });
  await waitOperation(page, 'create', 'succeeded');
  check(await page.getByRole('region', { name: /^Shard / }).count() === 2, 'not two shards');
  await page.getByRole('table', { name: 'Nodes of shard 0001' }).getByRole('cell', { name: 'in sync' })
    .waitFor({ timeout: 30000 });
  await shot(page, 'cluster-created');

  // Modify: the preview says what would change; applying changes it.
  let d = await dialog(page, 'Modify');
  await d.getByLabel('Tags').fill('team=web');
  check(await d.getByRole('button', { name: 'Apply changes' }).isDisabled(), 'apply before preview');
  await d.getByRole('button', { name: 'Preview' }).click();
  await d.getByText('Would change: tags.').waitFor();
  await shot(page, 'modify-preview');
  await d.getByRole('button', { name: 'Apply changes' }).click();
  await d.waitFor({ state: 'detached' });
  await page.getByRole('region', { name: 'Summary' }).getByText('team: web').waitFor();

  // Scaling is offered like any change: the preview names the operation
  // that would carry it out, or the refusal (more shards than the hosts hold).
  d = await dialog(page, 'Modify');
  await d.getByLabel('Shards').fill('3');
  await d.getByRole('button', { name: 'Preview' }).click();
  await d.getByText('Carried out by: scale_shards.').waitFor();
  await d.getByLabel('Shards').fill('400');
  await d.getByRole('button', { name: 'Preview' }).click();
  await d.getByRole('alert').filter({ hasText: 'capacity' }).waitFor();
  check(await d.getByRole('button', { name: 'Apply changes' }).isDisabled(), 'a refused change may be applied');
  await d.getByRole('button', { name: 'Cancel' }).click();
  await d.waitFor({ state: 'detached' });

  // Test failover of shard 0002: a failover operation succeeds.
  d = await dialog(page, 'Test failover');
  await d.getByLabel('Shard').selectOption('0002');
  await d.getByRole('button', { name: 'Fail over' }).click();
  await d.waitFor({ state: 'detached' });
  await waitOperation(page, 'failover', 'succeeded');

  // The AUTH token is behind a button.
  await page.getByRole('region', { name: 'Summary' }).getByRole('button', { name: 'Reveal' }).click();
  await page.getByRole('button', { name: 'Copy AUTH token' }).waitFor();

  // Engine upgrade of the redis 7.0 group: the preview runs the checks.
  await page.goto(`${base}/#/clusters/${groupId}`);
  await page.getByRole('heading', { level: 1, name: new RegExp(groupId) }).waitFor();
  d = await dialog(page, 'Upgrade engine');
  await d.getByLabel('Target').selectOption('valkey 8.0');
  await d.getByRole('button', { name: 'Preview' }).click();
  await d.getByText('Every check passed').waitFor();
  await d.getByText('Would change: engine, engine_version.').waitFor();
  await shot(page, 'upgrade-preview');
  await d.getByRole('button', { name: 'Upgrade' }).click();
  await d.waitFor({ state: 'detached' });
  await waitOperation(page, 'upgrade_engine', 'succeeded', 120000);
  await page.getByRole('region', { name: 'Summary' }).getByText('running 8.0.1').waitFor({ timeout: 30000 });

  // Its dashboards show the ended upgrade's report, before and after.
  await page.getByRole('link', { name: 'Metrics' }).click();
  const report = page.getByRole('table', { name: 'Upgrade report' });
  await report.getByRole('row').filter({ hasText: 'EngineCPUUtilization' }).waitFor({ timeout: 30000 });
  await page.getByText(/redis 7\.0 → valkey 8\.0/).waitFor();
  await report.scrollIntoViewIfNeeded();
  await shot(page, 'upgrade-report');

  // Delete: the button waits for the id typed.
  await page.goto(`${base}/#/clusters/${NEW}`);
  await page.getByRole('heading', { level: 1, name: new RegExp(NEW) }).waitFor();
  d = await dialog(page, 'Delete');
  const del = d.getByRole('button', { name: 'Delete cluster' });
  await d.getByLabel(`Type ${NEW} to confirm`).fill('web-mad');
  check(await del.isDisabled(), 'delete enabled before the id was typed');
  await d.getByLabel(`Type ${NEW} to confirm`).fill(NEW);
  await shot(page, 'delete-confirm');
  await del.click();
  await page.getByText(`Cluster ${NEW} does not exist`).waitFor({ timeout: 90000 });

  // Fleet and tokens, for admins.
  await page.getByRole('link', { name: 'Fleet' }).click();
  const hosts = page.getByRole('table', { name: 'Hosts' });
  await hosts.getByRole('row').filter({ hasText: 'healthy' }).first().waitFor();
  await shot(page, 'fleet');
  await page.getByRole('link', { name: 'Tokens' }).click();
  await page.getByLabel('Name').fill('from-console');
  await page.getByLabel('Expires').selectOption('30');
  await page.getByLabel('Host details').check();
  await page.getByRole('button', { name: 'Create token' }).click();
  await page.getByText('it is shown this once').waitFor();
  const secret = await page.locator('#token-secret code').textContent();
  check(/^cairn_[0-9a-f]{12}_/.test(secret), `no secret shown: ${secret}`);
  const made = page.getByRole('table', { name: 'Tokens' }).getByRole('row').filter({ hasText: 'from-console' });
  check(!/never\s*Revoke/.test(await made.textContent()), 'the token made to expire shows no expiry');
  check(/read\s*yes/.test(await made.textContent()), 'the read token made with host details does not say so');
  await shot(page, 'tokens');
  await page.getByRole('button', { name: 'Revoke from-console' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
  await page.getByRole('table', { name: 'Tokens' }).getByRole('row').filter({ hasText: 'from-console' })
    .filter({ hasText: 'revoked' }).waitFor();

  // A read token: everything visible, no action offered, and why.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await signIn(page, readToken);
  await page.getByRole('table', { name: 'Clusters' }).waitFor();
  check(await page.getByRole('link', { name: 'Create cluster' }).count() === 0, 'read token may create');
  check(!(await page.getByRole('link', { name: 'Fleet' }).isVisible()), 'read token sees Fleet');
  await page.getByRole('link', { name: groupId }).click();
  await page.getByRole('heading', { level: 1, name: new RegExp(groupId) }).waitFor();
  await page.getByText('This token has read scope').waitFor();
  for (const b of ['Modify', 'Upgrade engine', 'Test failover', 'Delete', 'Reveal'])
    check(await page.getByRole('button', { name: b, exact: true }).count() === 0, `read token sees ${b}`);
  await shot(page, 'cluster-read-only');

  const unexpected = errors.filter((e) => !/40[0-9]/.test(e));
  check(unexpected.length === 0, `errors on the page: ${unexpected.join('; ')}`);
  console.log(`ok: created ${NEW} in the form, modified, failed over, upgraded ${groupId}, deleted; read token read-only`);
}, shots);
