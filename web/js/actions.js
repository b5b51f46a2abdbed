// actions.js -- what an admin token can do to a cluster, each in a dialog
// that previews it first where the API can (PATCH with "dry_run": true
// makes every check the change would meet, an upgrade's included): modify,
// engine upgrade, test failover, take a snapshot, cancel a pending change,
// delete (after a final snapshot, if asked).

import { api, getAll } from './api.js';
import { h } from './dom.js';
import { openDialog } from './dialog.js';
import { checkbox, field, formatPairs, input, number, parsePairs, select } from './form.js';
import { snapshotFields } from './snapshots.js';

const path = (c) => `/v1/clusters/${encodeURIComponent(c.id)}`;

/* A merge patch of a flat map: removed keys null, new or changed ones set. */
function mapPatch(before, after) {
  const patch = {};
  for (const k of Object.keys(before || {})) if (!(k in after)) patch[k] = null;
  for (const [k, v] of Object.entries(after)) if ((before || {})[k] !== v) patch[k] = v;
  return Object.keys(patch).length ? patch : undefined;
}

function previewOf(p) {
  if (!p.changes.length) return h('p', { class: 'muted' }, 'Nothing would change.');
  return h('div', {},
    h('p', {}, `Would change: ${p.changes.join(', ')}.`),
    h('p', {}, p.operations.length ? `Carried out by: ${p.operations.join(', ')}.`
      : 'In effect at once, no operation.'),
    p.downtime && p.downtime.length
      ? h('p', { class: 'warn' }, `Down while their node restarts: ${p.downtime.map((d) => `shard ${d.shard_id}`).join(', ')}.`)
      : null);
}

/* Scaling fields: sent like any other. The preview says what the API will
 * do: shards, replicas and node type each run an operation, or are refused
 * (no room, data that would not fit), and the preview shows that refusal. */
function scalingFields(c, types) {
  return {
    node_type: field('node_type', 'Node type', select(types.map((t) => [t.name, `${t.name} · ${t.memory_gib} GiB`]), c.node_type)),
    num_shards: field('num_shards', 'Shards', input({ type: 'number', min: 1, max: 1000, value: c.num_shards })),
    replicas_per_shard: field('replicas_per_shard', 'Replicas per shard', input({ type: 'number', min: 0, max: 5, value: c.replicas_per_shard })),
  };
}

async function modify(c, done) {
  const types = await getAll('/v1/node-types', 'node_types');
  const scale = scalingFields(c, types);
  const f = {
    description: field('description', 'Description', input({ value: c.description, maxlength: 255 })),
    tags: field('tags', 'Tags', h('textarea', { rows: 3 }, formatPairs(c.tags)), 'One key=value per line.'),
    maintenance_window: field('maintenance_window', 'Maintenance window (UTC)', input({ value: c.maintenance_window })),
    ...snapshotFields(c),
    parameters: field('parameters', 'Parameters', h('textarea', { rows: 3 }, formatPairs(c.parameters)), 'One name=value per line.'),
    automatic_failover: field('automatic_failover', 'Automatic failover', checkbox(c.automatic_failover)),
    multi_az: field('multi_az', 'Multi-AZ', checkbox(c.multi_az)),
  };
  const patch = () => {
    const p = {};
    if (f.description.control.value !== c.description) p.description = f.description.control.value;
    for (const k of ['maintenance_window', 'snapshot_window'])
      if (f[k].control.value.trim() !== c[k]) p[k] = f[k].control.value.trim();
    for (const k of ['automatic_failover', 'multi_az'])
      if (f[k].control.checked !== c[k]) p[k] = f[k].control.checked;
    const tags = mapPatch(c.tags, parsePairs(f.tags.control.value));
    const params = mapPatch(c.parameters, parsePairs(f.parameters.control.value));
    if (tags) p.tags = tags;
    if (params) p.parameters = params;
    if (scale.node_type.control.value !== c.node_type) p.node_type = scale.node_type.control.value;
    const numbers = { snapshot_retention_days: f.snapshot_retention_days, ...scale };
    for (const k of ['snapshot_retention_days', 'num_shards', 'replicas_per_shard'])
      if (numbers[k].control.value.trim() !== String(c[k])) p[k] = number(numbers[k].control);
    return p;
  };
  openDialog({
    title: `Modify ${c.id}`,
    body: [Object.values(f).map((x) => x.el),
      h('fieldset', {}, h('legend', {}, 'Scaling'), Object.values(scale).map((x) => x.el))],
    confirm: 'Apply changes',
    preview: async () => previewOf(await api('PATCH', path(c), { ...patch(), dry_run: true })),
    submit: async () => { await api('PATCH', path(c), patch()); done(); },
  });
}

async function upgrade(c, done) {
  const versions = await getAll('/v1/engine-versions', 'engine_versions');
  const here = versions.find((v) => v.engine === c.engine && v.version === c.engine_version);
  const targets = here ? here.upgrade_targets : [];
  const target = field('engine_version', 'Target', select(targets.map((t) => [`${t.engine} ${t.version}`, `${t.engine} ${t.version}`])));
  const when = field('apply_immediately', 'When', select([['now', 'Now'],
    ['window', `In the maintenance window (${c.maintenance_window} UTC)`]], 'now'));
  const body = () => {
    const [engine, version] = target.control.value.split(' ');
    return { engine, engine_version: version, apply_immediately: when.control.value === 'now' };
  };
  openDialog({
    title: `Upgrade the engine of ${c.id}`,
    body: [h('p', {}, `Runs ${c.engine} ${c.engine_version_actual || c.engine_version}. `,
      'Nodes keep their hosts, ports and data; each shard fails over to an upgraded replica.'),
    targets.length ? [target.el, when.el]
      : h('p', { class: 'muted' }, `The catalog has no upgrade path from ${c.engine} ${c.engine_version}.`)],
    confirm: 'Upgrade',
    ready: () => targets.length > 0,
    preview: async () => {
      const p = await api('PATCH', path(c), { ...body(), dry_run: true });
      return [h('p', { class: 'ok' }, 'Every check passed: the target is installed on each host, the cluster is healthy and each primary\'s host has memory for a full sync.'), previewOf(p)];
    },
    submit: async () => { await api('PATCH', path(c), body()); done(); },
  });
}

function failover(c, done) {
  const shards = (c.shards || []).filter((s) => s.nodes.some((n) => n.role === 'replica'));
  const shard = field('shard_id', 'Shard', select(shards.map((s) => {
    const p = s.nodes.find((n) => n.role === 'primary');
    return [s.id, `${s.id}${p ? ` (primary on ${p.host_name || p.address}:${p.port})` : ''}`];
  })));
  openDialog({
    title: `Test failover of ${c.id}`,
    body: [h('p', {}, 'Promotes an in-sync replica of the shard; the old primary comes back as its replica. Clients see a pause of milliseconds.'),
      shards.length ? shard.el : h('p', { class: 'muted' }, 'No shard has a replica to fail over to.')],
    confirm: 'Fail over',
    ready: () => shards.length > 0,
    submit: async () => { await api('POST', `${path(c)}/failover`, { shard_id: shard.control.value }); done(); },
  });
}

/* A snapshot of the cluster, named or not; the page then lists it, being
 * taken, with a link to it. */
function snapshot(c, done) {
  const name = field('name', 'Snapshot name', input({ maxlength: 64, placeholder: `${c.id}-yyyymmdd-hhmmss` }),
    'Optional: lowercase letters, digits and hyphens, starting with a letter; left empty, the cluster id and the time in UTC.');
  openDialog({
    title: `Take a snapshot of ${c.id}`,
    body: [h('p', {}, 'Copies every shard\'s data into the snapshot store, where it is kept until deleted. ',
      'Each shard is saved by an in-sync replica where it has one, so that its primary is not forked; the cluster serves throughout, ',
      'and its other changes wait until the snapshot is taken.'), name.el],
    confirm: 'Take snapshot',
    submit: async () => {
      const n = name.control.value.trim();
      await api('POST', `${path(c)}/snapshots`, n ? { name: n } : {});
      done();
    },
  });
}

function remove(c, done) {
  const final = field('final_snapshot', 'Final snapshot', input({ maxlength: 64, placeholder: `${c.id}-final` }),
    'Optional: name a snapshot to take of the data first; it is kept until deleted, and a new cluster can be restored from it. If it fails, nothing is deleted.');
  const typed = field('confirm', `Type ${c.id} to confirm`, input({ autocomplete: 'off' }));
  openDialog({
    title: `Delete ${c.id}`,
    body: [h('p', { class: 'warn' }, 'Deletes every node and its data. This cannot be undone.'), final.el, typed.el],
    confirm: 'Delete cluster',
    danger: true,
    ready: () => typed.control.value === c.id,
    submit: async () => {
      const name = final.control.value.trim();
      await api('DELETE', name ? `${path(c)}?final_snapshot=${encodeURIComponent(name)}` : path(c));
      done();
    },
  });
}

export function cancelPending(c, done) {
  openDialog({
    title: `Cancel the pending change of ${c.id}`,
    body: h('p', {}, 'The scheduled engine upgrade will not run, and the spec goes back.'),
    confirm: 'Cancel the change',
    submit: async () => { await api('DELETE', `${path(c)}/pending-changes`); done(); },
  });
}

/** The action buttons of a cluster. done() refreshes the page. */
export function actionBar(c, done) {
  const busy = c.status === 'deleting';
  const b = (text, fn) => h('button', { type: 'button', disabled: busy, onclick: () => fn(c, done) }, text);
  return h('div', { class: 'actions', role: 'group', 'aria-label': 'Actions' },
    b('Modify', modify), b('Upgrade engine', upgrade), b('Test failover', failover), b('Take snapshot', snapshot),
    h('button', { type: 'button', class: 'danger', disabled: busy, onclick: () => remove(c, done) }, 'Delete'));
}
