// snapshots.js -- backups: the snapshots list (#/snapshots, filtered by
// cluster, paged as the API pages it), one snapshot with its shards
// (#/snapshots/<id or name>), a cluster's snapshots and their settings on
// its page; for an admin token, restore a snapshot into a new cluster and
// delete one. The pages follow a snapshot being taken or deleted.

import { api, canChange, get, ApiError, READ_ONLY } from './api.js';
import { alertLine, h, show, table } from './dom.js';
import { openDialog } from './dialog.js';
import { follow } from './follow.js';
import { field, input, number, select } from './form.js';
import { bytes, count, mode, shape, statusBadge } from './format.js';

const FOLLOW_MS = 2000;  // while a snapshot is being taken or deleted
const PAGE_SIZE = 50;

/** The API's defaults of a cluster's automatic snapshots. */
export const SNAPSHOT_DEFAULTS = { snapshot_retention_days: 0, snapshot_window: '03:00-04:00' };

/** The fields of a cluster's automatic snapshots, filled from spec (a
 *  cluster, or SNAPSHOT_DEFAULTS), by their names in the spec. */
export function snapshotFields(spec) {
  return {
    snapshot_retention_days: field('snapshot_retention_days', 'Snapshot retention (days)',
      input({ type: 'number', min: 0, max: 35, value: spec.snapshot_retention_days }),
      '0 to 35: how long each daily automatic snapshot is kept; 0 takes none.'),
    snapshot_window: field('snapshot_window', 'Snapshot window (UTC)', input({ value: spec.snapshot_window }),
      'hh:mm-hh:mm, an hour or more: when the daily automatic snapshot begins.'),
  };
}

const at = (s) => `/v1/snapshots/${encodeURIComponent(s.id)}`;
const link = (s) => h('a', { href: `#/snapshots/${encodeURIComponent(s.id)}` }, s.name);
const clusterLink = (id) => h('a', { href: `#/clusters/${encodeURIComponent(id)}` }, id);

/** Whether one of snapshots is on its way somewhere (being taken or
 *  deleted), which a page showing it follows. */
export function snapshotsUnderWay(snapshots) {
  return snapshots.some((s) => s.status === 'creating' || s.status === 'deleting');
}

function failure(s) {
  return s.error ? h('div', { class: 'error' }, `${s.error.code}: ${s.error.message}`) : null;
}

/* A restore: a new cluster with the snapshot's data, in its shape unless
 * told otherwise; its page opens once the API has accepted it. */
function restore(s) {
  const f = {
    id: field('id', 'New cluster ID', input({ required: true, maxlength: 40, placeholder: `${s.cluster_id}-restored` }),
      'Lowercase letters, digits and hyphens; it names the cluster for good.'),
    cluster_mode: field('cluster_mode', 'Cluster mode', select([['', `the snapshot's (${s.cluster_mode})`],
      ['enabled', 'enabled (sharded)'], ['disabled', 'disabled (one primary and its replicas)']], '')),
    num_shards: field('num_shards', 'Shards', input({ type: 'number', min: 1, max: 1000, placeholder: String(s.num_shards) }),
      `Empty: the snapshot's ${s.num_shards}, or 1 with cluster mode disabled.`),
  };
  const body = () => {
    const b = { id: f.id.control.value.trim(), restore_from: { snapshot_id: s.id } };
    if (f.cluster_mode.control.value) b.cluster_mode = f.cluster_mode.control.value;
    if (f.num_shards.control.value.trim()) b.num_shards = number(f.num_shards.control);
    return b;
  };
  openDialog({
    title: `Restore ${s.name}`,
    body: [h('p', {}, `A new cluster with the data of ${s.name} (${count(s.keys)} keys), taken of ${s.cluster_id}: `,
      `${s.engine} ${s.engine_version}, ${s.node_type}, ${mode(s)}, ${shape(s)}. `,
      'What you leave as it is stays the snapshot\'s; the new cluster has an AUTH token of its own.'),
    Object.values(f).map((x) => x.el)],
    confirm: 'Restore',
    ready: () => f.id.control.value.trim() !== '',
    submit: async () => {
      const b = body();
      await api('POST', '/v1/clusters', b);
      location.hash = `#/clusters/${encodeURIComponent(b.id)}`;
    },
  });
}

function remove(s, done) {
  openDialog({
    title: `Delete ${s.name}`,
    body: [h('p', { class: 'warn' }, `Removes the files of ${s.name} from the snapshot store: no cluster can be restored from it any more. This cannot be undone.`),
      s.expires_at ? h('p', { class: 'muted' }, `Being automatic, it would be deleted at ${s.expires_at} anyway.`) : null],
    confirm: 'Delete snapshot',
    danger: true,
    submit: async () => { await api('DELETE', at(s)); done(); },
  });
}

/* Restore (an available snapshot) and Delete (one not being deleted); in
 * a list's row, plain and named after the snapshot. */
function buttons(s, done, inRow) {
  const label = (verb) => (inRow ? `${verb} ${s.name}` : null);
  return [
    h('button', { type: 'button', class: inRow ? 'plain' : '', 'aria-label': label('Restore'),
      disabled: s.status !== 'available', onclick: () => restore(s) }, 'Restore'),
    h('button', { type: 'button', class: inRow ? 'plain' : 'danger', 'aria-label': label('Delete'),
      disabled: s.status === 'deleting', onclick: () => remove(s, done) }, 'Delete'),
  ];
}

function row(s, done, withCluster) {
  return h('tr', {},
    h('td', {}, link(s)),
    withCluster ? h('td', {}, clusterLink(s.cluster_id)) : null,
    h('td', {}, s.source),
    h('td', {}, statusBadge(s.status), failure(s)),
    h('td', { class: 'optional mono' }, s.created_at),
    h('td', {}, bytes(s.size_bytes)),
    h('td', {}, count(s.keys)),
    done ? h('td', { class: 'row-actions' }, buttons(s, done, true)) : null);
}

function heads(withCluster, withActions) {
  return [['Name'], withCluster ? ['Cluster'] : null, ['Source'], ['Status'], ['Created', 'optional'],
    ['Size'], ['Keys'], withActions ? [''] : null].filter(Boolean);
}

/** A cluster's page: its automatic snapshots' settings and its newest
 *  snapshots (the first page of GET /v1/snapshots?cluster_id=). */
export function clusterSnapshots(c, snapshots) {
  const days = c.snapshot_retention_days;
  return [
    h('h2', {}, 'Snapshots'),
    h('p', {}, h('span', { class: 'muted' }, 'Automatic snapshots: '),
      days ? `daily in ${c.snapshot_window} UTC, each kept ${days} day${days > 1 ? 's' : ''}`
        : `none (retention 0 days; window ${c.snapshot_window} UTC)`),
    table('Snapshots', heads(false, false), snapshots.map((s) => row(s, null, false)), 'No snapshots yet.'),
    h('p', {}, h('a', { href: `#/snapshots?cluster_id=${encodeURIComponent(c.id)}` }, `All snapshots of ${c.id}`)),
  ];
}

/* One page of the list, drawn into box; the delay before the next look. */
async function loadList(box, params, refresh) {
  let page;
  try {
    page = await get('/v1/snapshots', { cluster_id: params.cluster_id, page_size: PAGE_SIZE, page_token: params.page_token });
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 400) throw e;
    show(box, alertLine(e.message));
    return null;
  }
  const admin = canChange();
  const q = new URLSearchParams(params);
  if (page.next_page_token) q.set('page_token', page.next_page_token);
  show(box, table('Snapshots', heads(true, admin), page.snapshots.map((s) => row(s, admin ? refresh : null, true)),
    params.cluster_id ? `No snapshots of ${params.cluster_id}.` : 'No snapshots yet.'),
  page.next_page_token ? h('div', { class: 'pager' }, h('a', { href: `#/snapshots?${q}` }, 'Next page')) : null);
  return snapshotsUnderWay(page.snapshots) ? FOLLOW_MS : null;
}

export function renderSnapshots(main, params) {
  const cluster = h('input', { id: 'f-cluster', placeholder: 'cluster id', value: params.cluster_id || '' });
  const filters = h('form', { class: 'filters', 'aria-label': 'Filters', onsubmit: (e) => {
    e.preventDefault();
    const id = cluster.value.trim();
    location.hash = `#/snapshots${id ? `?cluster_id=${encodeURIComponent(id)}` : ''}`;
  } }, h('div', {}, h('label', { for: 'f-cluster' }, 'Cluster'), cluster), h('button', { type: 'submit' }, 'Filter'));
  const box = h('div');
  show(main, h('h1', {}, 'Snapshots'),
    h('p', { class: 'muted', role: canChange() ? null : 'note' },
      canChange() ? 'Take one from its cluster\'s page; a deleted cluster\'s snapshots stay until deleted.' : READ_ONLY),
    filters, box);
  return follow(box, (refresh) => loadList(box, params, refresh));
}

function shardRow(x) {
  const slots = x.slots ? x.slots.map(([a, b]) => (a === b ? a : `${a}-${b}`)).join(', ') : '—';
  return h('tr', {},
    h('td', {}, String(x.index + 1).padStart(4, '0')),
    h('td', { class: 'optional' }, slots),
    h('td', {}, count(x.keys)),
    h('td', {}, bytes(x.memory_bytes)),
    h('td', {}, bytes(x.size_bytes)),
    h('td', {}, bytes(x.stored_bytes)),
    h('td', { class: 'optional mono' }, x.sha256 || '—'));
}

function snapshotPage(s, refresh) {
  const term = (dt, ...dd) => [h('dt', {}, dt), h('dd', {}, ...dd)];
  return [
    h('h1', {}, s.name, ' ', statusBadge(s.status)),
    canChange() ? h('div', { class: 'actions', role: 'group', 'aria-label': 'Actions' }, buttons(s, refresh, false))
      : h('p', { class: 'muted', role: 'note' }, READ_ONLY),
    failure(s),
    h('section', { class: 'panel', 'aria-label': 'Summary' }, h('dl', { class: 'summary' },
      term('ID', h('code', {}, s.id)),
      term('Cluster', clusterLink(s.cluster_id)),
      term('Source', s.source),
      term('Engine', `${s.engine} ${s.engine_version}`),
      term('Mode', mode(s)),
      term('Node type', s.node_type),
      term('Shards × nodes', shape(s)),
      term('Keys', count(s.keys)),
      term('Data', bytes(s.memory_bytes), h('span', { class: 'muted' }, ' in memory, what a restore needs room for')),
      term('Size', bytes(s.size_bytes), h('span', { class: 'muted' }, ` in RDB files, ${bytes(s.stored_bytes)} stored`)),
      term('Taken', s.created_at, h('span', { class: 'muted' }, ` · completed ${s.completed_at || 'not yet'}`)),
      term('Kept', s.expires_at ? `until ${s.expires_at}` : 'until deleted'),
      term('Operation', h('code', {}, s.operation_id)))),
    h('h2', {}, 'Shards'),
    table('Shards', [['Shard'], ['Slots', 'optional'], ['Keys'], ['Data'], ['Size'], ['Stored'], ['SHA-256', 'optional']],
      s.shards.map(shardRow), 'None yet: the shards are listed once their nodes are chosen.'),
  ];
}

export function renderSnapshot(main, id) {
  return follow(main, async (refresh) => {
    let s;
    try {
      s = await get(`/v1/snapshots/${encodeURIComponent(id)}`);
    } catch (e) {
      if (!(e instanceof ApiError) || e.status !== 404) throw e;
      show(main, h('h1', {}, id), h('p', { role: 'status' }, `Snapshot ${id} does not exist: it was deleted or never taken. `,
        h('a', { href: '#/snapshots' }, 'Back to the snapshots')));
      return null;
    }
    const y = window.scrollY;
    show(main, snapshotPage(s, refresh));
    window.scrollTo(0, y);
    return snapshotsUnderWay([s]) ? FOLLOW_MS : null;
  });
}
