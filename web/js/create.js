// create.js -- a new cluster, from the catalogs: engines and versions
// (GET /v1/engine-versions), node types with memory, vCPUs and price
// (GET /v1/node-types). The API's defaults are filled in, its refusals
// shown next to their fields, and the monthly price follows the choices.

import { api, getAll } from './api.js';
import { h, show } from './dom.js';
import { checkbox, field, formAlert, input, number, parsePairs, select, showErrors } from './form.js';
import { money } from './format.js';
import { sizingPanel } from './sizing.js';
import { SNAPSHOT_DEFAULTS, snapshotFields } from './snapshots.js';

const HOURS_PER_MONTH = 730;

function versionLabel(v) {
  const state = v.schedulable ? '' : ' (no host has it)';
  return `${v.version}${v.status === 'available' ? '' : ` · ${v.status}`}${state}`;
}

function typeLabel(t, engine) {
  const price = t.price_usd_per_hour && t.price_usd_per_hour[engine];
  return `${t.name} · ${t.memory_gib} GiB · ${t.vcpus} vCPU${t.vcpus > 1 ? 's' : ''}` +
    (price !== undefined ? ` · ${money(price)}/h` : '');
}

export async function renderCreate(main) {
  const [versions, types] = await Promise.all([
    getAll('/v1/engine-versions', 'engine_versions'),
    getAll('/v1/node-types', 'node_types'),
  ]);
  const engines = [...new Set(versions.map((v) => v.engine))];
  const f = {
    id: field('id', 'Cluster ID', input({ required: true, maxlength: 40, placeholder: 'orders' }),
      'Lowercase letters, digits and hyphens; it names the cluster for good.'),
    description: field('description', 'Description', input({ maxlength: 255 })),
    engine: field('engine', 'Engine', select(engines.map((e) => [e, e]), engines.includes('valkey') ? 'valkey' : engines[0])),
    engine_version: field('engine_version', 'Engine version', select([])),
    node_type: field('node_type', 'Node type', select([])),
    cluster_mode: field('cluster_mode', 'Cluster mode', select([['enabled', 'enabled (sharded)'],
      ['disabled', 'disabled (one primary and its replicas)']], 'enabled')),
    num_shards: field('num_shards', 'Shards', input({ type: 'number', min: 1, max: 1000, value: 1 }), '1 to 1000; 1 with cluster mode disabled.'),
    replicas_per_shard: field('replicas_per_shard', 'Replicas per shard', input({ type: 'number', min: 0, max: 5, value: 1 }), '0 to 5.'),
    automatic_failover: field('automatic_failover', 'Automatic failover', checkbox(true)),
    multi_az: field('multi_az', 'Multi-AZ', checkbox(true), 'Never a replica in its primary\'s availability zone.'),
    transit_encryption: field('transit_encryption', 'Encryption in transit', checkbox(false),
      'TLS only, with certificates from Cairn\'s authority (GET /v1/ca-certificate); chosen now, for good.'),
    maintenance_window: field('maintenance_window', 'Maintenance window (UTC)', input({ value: 'sun:05:00-sun:06:00' })),
    ...snapshotFields(SNAPSHOT_DEFAULTS),
    parameters: field('parameters', 'Parameters', h('textarea', { rows: 3, placeholder: 'maxmemory-policy=allkeys-lru' }), 'One name=value per line.'),
    tags: field('tags', 'Tags', h('textarea', { rows: 2, placeholder: 'team=checkout' }), 'One key=value per line.'),
  };
  const price = h('output', { class: 'price', 'aria-live': 'polite' });
  const alert = formAlert();
  const submit = h('button', { type: 'submit' }, 'Create cluster');
  const touched = new Set();

  const fillVersions = () => {
    const own = versions.filter((v) => v.engine === f.engine.control.value);
    const best = own.filter((v) => v.schedulable).pop() || own[own.length - 1];
    show(f.engine_version.control, own.map((v) =>
      h('option', { value: v.version, selected: v === best }, versionLabel(v))));
  };
  const fillTypes = () => {
    const keep = f.node_type.control.value || (types.find((t) => t.name === 'cache.t3.micro') || types[0]).name;
    show(f.node_type.control, types.map((t) =>
      h('option', { value: t.name, selected: t.name === keep }, typeLabel(t, f.engine.control.value))));
  };
  /* The API's defaults, until the user sets the box himself. */
  const defaults = () => {
    const enabled = f.cluster_mode.control.value === 'enabled';
    const replicas = Number(f.replicas_per_shard.control.value) || 0;
    if (!enabled) f.num_shards.control.value = 1;
    f.num_shards.control.disabled = !enabled;
    if (!touched.has('automatic_failover')) f.automatic_failover.control.checked = enabled || replicas > 0;
    if (!touched.has('multi_az')) f.multi_az.control.checked = f.automatic_failover.control.checked;
  };
  const estimate = () => {
    const t = types.find((x) => x.name === f.node_type.control.value);
    const nodes = (Number(f.num_shards.control.value) || 0) * (1 + (Number(f.replicas_per_shard.control.value) || 0));
    const hourly = t && t.price_usd_per_hour ? t.price_usd_per_hour[f.engine.control.value] : undefined;
    price.textContent = hourly === undefined || !nodes ? 'Price: not known for this choice'
      : `${nodes} node${nodes > 1 ? 's' : ''} × ${money(hourly)}/h ≈ ${money(nodes * hourly * HOURS_PER_MONTH)} a month`;
  };
  const refresh = () => { defaults(); estimate(); };

  f.engine.control.addEventListener('change', () => { fillVersions(); fillTypes(); refresh(); });
  for (const k of ['node_type', 'cluster_mode', 'num_shards', 'replicas_per_shard']) {
    f[k].control.addEventListener('input', refresh);
    f[k].control.addEventListener('change', refresh);
  }
  for (const k of ['automatic_failover', 'multi_az'])
    f[k].control.addEventListener('change', () => { touched.add(k); refresh(); });

  const form = h('form', { class: 'panel create', 'aria-labelledby': 'create-title', novalidate: true },
    h('h1', { id: 'create-title' }, 'Create cluster'),
    h('div', { class: 'grid' }, Object.values(f).map((x) => x.el)),
    price, alert, h('div', { class: 'buttons' }, submit, h('a', { href: '#/clusters' }, 'Cancel')));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = {
      id: f.id.control.value.trim(),
      description: f.description.control.value,
      engine: f.engine.control.value,
      engine_version: f.engine_version.control.value,
      node_type: f.node_type.control.value,
      cluster_mode: f.cluster_mode.control.value,
      num_shards: number(f.num_shards.control),
      replicas_per_shard: number(f.replicas_per_shard.control),
      automatic_failover: f.automatic_failover.control.checked,
      multi_az: f.multi_az.control.checked,
      transit_encryption: f.transit_encryption.control.checked,
      maintenance_window: f.maintenance_window.control.value.trim(),
      snapshot_retention_days: number(f.snapshot_retention_days.control),
      snapshot_window: f.snapshot_window.control.value.trim(),
      parameters: parsePairs(f.parameters.control.value),
      tags: parsePairs(f.tags.control.value),
    };
    submit.disabled = true;
    try {
      await api('POST', '/v1/clusters', body);
      location.hash = `#/clusters/${encodeURIComponent(body.id)}`;
    } catch (e) {
      showErrors(form, e);
    } finally {
      submit.disabled = false;
    }
  });
  /* An option of the sizing panel fills the form; the user still decides. */
  const current = () => {
    const id = f.id.control.value.trim();
    return { ...(id ? { id } : {}), engine: f.engine.control.value,
      engine_version: f.engine_version.control.value };
  };
  const use = (spec) => {
    if (!f.id.control.value.trim()) f.id.control.value = spec.id;
    f.engine.control.value = spec.engine;
    fillVersions();
    f.engine_version.control.value = spec.engine_version;
    fillTypes();
    for (const k of ['node_type', 'cluster_mode', 'num_shards', 'replicas_per_shard'])
      f[k].control.value = spec[k];
    for (const k of ['automatic_failover', 'multi_az']) {
      f[k].control.checked = spec[k];
      touched.add(k);
    }
    refresh();
    form.scrollIntoView({ block: 'start' });
    f.id.control.focus();
  };
  fillVersions();
  fillTypes();
  refresh();
  show(main, sizingPanel(current, use), form);
  f.id.control.focus();
}
