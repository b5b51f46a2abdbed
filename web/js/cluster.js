// cluster.js -- one cluster: summary, endpoints, topology (shards × nodes
// with their replication), pending changes, parameters, snapshots,
// operations and events, and for an admin token its actions. While an
// operation runs (or a snapshot is taken) the page follows it every 2 s,
// and while a replica catches up every 5 s.

import { api, canChange, get, ApiError, READ_ONLY } from './api.js';
import { h, show, table } from './dom.js';
import { actionBar, cancelPending } from './actions.js';
import { follow } from './follow.js';
import { bytes, clusterTabs, copyButton, mode, operation, shape, statusBadge, tags } from './format.js';
import { clusterSnapshots, snapshotsUnderWay } from './snapshots.js';

const FOLLOW_MS = 2000;  // while an operation runs
const SETTLE_MS = 5000;  // while a replica catches up

/* A row per kind of endpoint (configuration, primary, readers): its
 * addresses, and one button that copies them all. */
function endpoints(c) {
  const rows = [];
  for (const [kind, list] of Object.entries(c.endpoints || {})) {
    const all = [].concat(list || []).map((e) => `${e.address}:${e.port}`);
    if (!all.length) continue;
    rows.push(h('div', { class: 'endpoint' }, h('span', { class: 'muted' }, `${kind} `),
      all.map((text) => [h('code', {}, text), ' ']), copyButton(all.join(','), `${kind} endpoint${all.length > 1 ? 's' : ''}`)));
  }
  return rows.length ? rows : h('span', { class: 'muted' }, 'none yet');
}

/* The AUTH token behind a button: fetched only when asked, admin only. */
function authToken(c) {
  if (!canChange()) return h('span', { class: 'muted' }, 'hidden from read tokens');
  const box = h('span');
  const reveal = h('button', { type: 'button', class: 'plain' }, 'Reveal');
  reveal.addEventListener('click', async () => {
    const { auth_token: t } = await api('GET', `/v1/clusters/${encodeURIComponent(c.id)}/auth`);
    show(box, h('code', {}, t || 'none'), ' ', t ? copyButton(t, 'AUTH token') : null);
  });
  show(box, reveal);
  return box;
}

function replication(n) {
  const r = n.replication;
  if (!r) return [h('td', { class: 'muted' }, '—'), h('td', { class: 'muted' }, '—'), h('td', { class: 'muted' }, '—')];
  const sync = r.loading ? 'loading' : r.sync_in_progress ? 'full sync' : 'in sync';
  return [h('td', { class: r.link_status === 'up' ? 'ok' : 'bad' }, r.link_status || 'unknown'),
    h('td', { class: sync === 'in sync' ? '' : 'busy' }, sync),
    h('td', {}, r.lag_bytes === null ? '—' : bytes(r.lag_bytes))];
}

function shardTable(s) {
  const heads = ['Role', 'AZ', 'Host', 'Port', 'Version', 'Status', 'Link', 'Sync', 'Lag'];
  return h('section', { class: 'panel shard', 'aria-label': `Shard ${s.id}` },
    h('h3', {}, `Shard ${s.id}`, s.slots && s.slots.length ? h('span', { class: 'muted' }, ` slots ${s.slots.join(', ')}`) : null),
    table(`Nodes of shard ${s.id}`, heads, s.nodes.map((n) => h('tr', {},
      h('td', { class: 'role' }, n.role || 'unknown'),
      h('td', {}, n.az || '—'),
      h('td', {}, n.host_name || n.address || '—'),
      h('td', { class: 'mono' }, n.port || '—'),
      h('td', {}, n.engine_version ? `${n.engine} ${n.engine_version}` : '—'),
      h('td', {}, statusBadge(n.status)),
      replication(n)))));
}

function pending(c, refresh) {
  const p = c.pending_changes || {};
  const rows = [];
  if (p.engine_upgrade) {
    const u = p.engine_upgrade;
    rows.push(h('li', {}, `Engine upgrade to ${u.engine} ${u.engine_version}, `,
      u.apply === 'maintenance_window' ? `in the maintenance window (starts ${u.starts_at})` : 'now',
      u.downtime && u.downtime.length ? ` — shards down meanwhile: ${u.downtime.map((d) => d.shard_id).join(', ')}` : '',
      u.apply === 'maintenance_window' && canChange()
        ? [' ', h('button', { type: 'button', class: 'plain', onclick: () => cancelPending(c, refresh) }, 'Cancel')] : null));
  }
  if (p.parameters) {
    rows.push(h('li', {}, `Parameters ${Object.keys(p.parameters.values || {}).join(', ')}: ${p.parameters.applies}`,
      p.parameters.restart_needed && p.parameters.restart_needed.length
        ? ` (need a restart: ${p.parameters.restart_needed.join(', ')})` : ''));
  }
  return h('section', { class: 'panel', 'aria-label': 'Pending changes' },
    h('h2', {}, 'Pending changes'),
    rows.length ? h('ul', {}, rows) : h('p', { class: 'muted' }, 'None.'),
    h('p', {}, h('span', { class: 'muted' }, 'Maintenance window: '), `${c.maintenance_window} UTC`));
}

function parameters(c) {
  const rows = Object.entries(c.parameters || {}).map(([k, v]) => h('tr', {}, h('td', { class: 'mono' }, k), h('td', { class: 'mono' }, v)));
  return h('section', { class: 'panel', 'aria-label': 'Parameters' },
    h('h2', {}, 'Parameters'),
    rows.length ? h('table', { 'aria-label': 'Parameters' }, h('tbody', {}, rows))
      : h('p', { class: 'muted' }, 'The engine\'s defaults, with Cairn\'s managed settings.'));
}

/* A scale or rebalance's slot moves: "1200 of 4096 slots, 73250 keys, about 11 s left". */
function slotMoves(m) {
  if (!m) return '';
  const left = m.eta_s == null ? '' : `, about ${Math.ceil(m.eta_s)} s left`;
  return ` (${m.slots_moved} of ${m.slots_total} slots, ${m.keys_moved} keys${left})`;
}

function operationRow(o) {
  return h('tr', {},
    h('td', {}, o.kind),
    h('td', {}, statusBadge(o.status, 'op-')),
    h('td', {}, `${o.step_name || ''}${slotMoves(o.slot_migration)}`),
    h('td', {}, h('progress', { max: 100, value: o.progress || 0, 'aria-label': `${o.kind} progress` }),
      ` ${o.progress || 0}%`),
    h('td', { class: 'optional' }, o.started_at || ''),
    h('td', { class: 'optional' }, o.finished_at || ''),
    h('td', {}, o.error ? h('span', { class: 'error' }, `${o.error.code}: ${o.error.message}`) : ''));
}

function eventRow(e) {
  return h('tr', { class: `sev-${e.severity}` },
    h('td', { class: 'mono' }, e.created_at),
    h('td', {}, e.type),
    h('td', {}, e.message));
}

/* The cluster's newest operations and snapshots, and its events of the
 * last day (the newest 25), newest first. */
async function history(id) {
  const since = new Date(Date.now() - 86400e3).toISOString();
  const [ops, snaps, evs] = await Promise.all([
    get('/v1/operations', { cluster_id: id, page_size: 10 }),
    get('/v1/snapshots', { cluster_id: id, page_size: 5 }),
    get('/v1/events', { cluster_id: id, since, page_size: 200 }),
  ]);
  return { operations: ops.operations, snapshots: snaps.snapshots, events: evs.events.slice(-25).reverse() };
}

/* Where a restored cluster's data came from. */
function restoredFrom(c) {
  if (!c.restore_from) return null;
  const id = c.restore_from.snapshot_id;
  return [h('dt', {}, 'Restored from'), h('dd', {}, 'snapshot ', h('a', { href: `#/snapshots/${encodeURIComponent(id)}` }, id))];
}

function page(c, { operations, snapshots, events }, refresh) {
  return [
    h('h1', {}, c.id, ' ', statusBadge(c.status), operation(c.current_operation)),
    clusterTabs(c.id, 'Overview'),
    canChange() ? actionBar(c, refresh) : h('p', { class: 'muted', role: 'note' }, READ_ONLY),
    h('section', { class: 'panel', 'aria-label': 'Summary' },
      h('dl', { class: 'summary' },
        h('dt', {}, 'Description'), h('dd', {}, c.description || h('span', { class: 'muted' }, 'none')),
        h('dt', {}, 'Engine'), h('dd', {}, `${c.engine} ${c.engine_version}`,
          h('span', { class: 'muted' }, ` · running ${c.engine_version_actual || 'not yet'}`)),
        h('dt', {}, 'Mode'), h('dd', {}, mode(c)),
        h('dt', {}, 'Node type'), h('dd', {}, c.node_type),
        h('dt', {}, 'Shards × nodes'), h('dd', {}, shape(c)),
        h('dt', {}, 'Automatic failover'), h('dd', {}, c.automatic_failover ? 'yes' : 'no'),
        h('dt', {}, 'Multi-AZ'), h('dd', {}, c.multi_az ? 'yes' : 'no'),
        h('dt', {}, 'Encryption in transit'), h('dd', {}, c.transit_encryption ? 'TLS only' : 'no'),
        h('dt', {}, 'Endpoints'), h('dd', {}, endpoints(c)),
        h('dt', {}, 'AUTH token'), h('dd', {}, authToken(c)),
        restoredFrom(c),
        h('dt', {}, 'Tags'), h('dd', {}, tags(c.tags).length ? tags(c.tags) : h('span', { class: 'muted' }, 'none')))),
    h('h2', {}, 'Topology'),
    h('div', { class: 'shards' }, (c.shards || []).map(shardTable)),
    h('div', { class: 'two' }, pending(c, refresh), parameters(c)),
    clusterSnapshots(c, snapshots),
    h('h2', {}, 'Operations'),
    table('Operations', [['Kind'], ['Status'], ['Step'], ['Progress'], ['Started', 'optional'],
      ['Finished', 'optional'], ['Error']], operations.map(operationRow), 'No operations yet.'),
    h('h2', {}, 'Events of the last day'),
    table('Events', [['Time'], ['Type'], ['Message']], events.map(eventRow), 'No events yet.'),
  ];
}

/* One load of the page; the delay before the next (null once the
 * cluster is gone or all is settled). */
async function load(main, id, refresh) {
  let c;
  try {
    c = await get(`/v1/clusters/${encodeURIComponent(id)}`);
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 404) throw e;
    show(main, h('h1', {}, id), h('p', { role: 'status' }, `Cluster ${id} does not exist: it was deleted or never created. `,
      h('a', { href: `#/snapshots?cluster_id=${encodeURIComponent(id)}` }, 'Its snapshots'), ' · ',
      h('a', { href: '#/clusters' }, 'Back to the clusters')));
    return null;
  }
  const seen = await history(c.id);
  const y = window.scrollY;
  show(main, page(c, seen, refresh));
  window.scrollTo(0, y);
  return nextLook(c, seen.snapshots);
}

/* How soon to look again: soon while an operation runs, the status is on
 * its way somewhere or a snapshot is being taken or deleted, less often
 * while a replica is not linked and in sync, never once all is settled. */
function nextLook(c, snapshots) {
  if (c.current_operation || !['available', 'create-failed'].includes(c.status) || snapshotsUnderWay(snapshots))
    return FOLLOW_MS;
  const replicas = (c.shards || []).flatMap((s) => s.nodes).filter((n) => n.replication);
  const settled = (r) => r.link_status === 'up' && !r.sync_in_progress && !r.loading;
  return replicas.every((n) => settled(n.replication)) ? null : SETTLE_MS;
}

export function renderCluster(main, id) {
  return follow(main, (refresh) => load(main, id, refresh));
}
