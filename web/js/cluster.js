// cluster.js -- one cluster: its summary, endpoints and topology, as the
// API returns them (roles read from the engines, never guessed).

import { get } from './api.js';
import { h, show } from './dom.js';
import { operation, shape, statusBadge, tags } from './format.js';

function copyButton(text) {
  return h('button', { type: 'button', class: 'plain', 'aria-label': `Copy ${text}`,
                       onclick: () => navigator.clipboard && navigator.clipboard.writeText(text) }, 'Copy');
}

function endpoints(c) {
  const rows = [];
  for (const [kind, list] of Object.entries(c.endpoints || {})) {
    for (const e of [].concat(list)) {
      const text = `${e.address}:${e.port}`;
      rows.push(h('div', {}, h('span', { class: 'muted' }, `${kind} `), h('code', {}, text), ' ', copyButton(text)));
    }
  }
  return rows.length ? rows : h('span', { class: 'muted' }, 'none yet');
}

function node(n) {
  return h('div', { class: 'node' },
    h('span', { class: 'role' }, n.role || 'unknown'), ' ',
    h('span', { class: 'mono' }, `${n.address || '?'}:${n.port || '?'}`), ' ',
    h('span', { class: 'muted' }, `${n.az || ''} · ${n.engine || ''} ${n.engine_version || ''} · ${n.status}`));
}

function operationRow(o) {
  return h('tr', {},
    h('td', {}, o.kind),
    h('td', {}, statusBadge(o.status)),
    h('td', {}, o.step_name || ''),
    h('td', {}, h('progress', { max: 100, value: o.progress || 0, 'aria-label': `${o.kind} progress` }),
      ` ${o.progress || 0}%`),
    h('td', { class: 'optional' }, o.started_at || ''),
    h('td', { class: 'optional' }, o.finished_at || ''),
    h('td', {}, o.error ? h('span', { class: 'error' }, `${o.error.code}: ${o.error.message}`) : ''));
}

function eventRow(e) {
  return h('tr', {},
    h('td', { class: 'mono' }, e.created_at),
    h('td', {}, e.type),
    h('td', {}, e.message));
}

/* The cluster's newest operations, and its events of the last day (the
 * newest 25), newest first. */
async function history(id) {
  const since = new Date(Date.now() - 86400e3).toISOString();
  const [ops, evs] = await Promise.all([
    get('/v1/operations', { cluster_id: id, page_size: 10 }),
    get('/v1/events', { cluster_id: id, since, page_size: 200 }),
  ]);
  return { operations: ops.operations, events: evs.events.slice(-25).reverse() };
}

function table(label, heads, rows, empty) {
  return h('table', { 'aria-label': label },
    h('thead', {}, h('tr', {}, heads.map(([text, cls]) => h('th', { class: cls }, text)))),
    h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: heads.length, class: 'muted' }, empty))));
}

export async function renderCluster(main, id) {
  const c = await get(`/v1/clusters/${encodeURIComponent(id)}`);
  const { operations, events } = await history(c.id);
  show(main,
    h('h1', {}, c.id, ' ', statusBadge(c.status), operation(c.current_operation)),
    h('p', {}, h('a', { href: `#/clusters/${encodeURIComponent(c.id)}/metrics` }, 'Metrics')),
    h('section', { class: 'panel', 'aria-label': 'Summary' },
      h('dl', { class: 'summary' },
        h('dt', {}, 'Engine'), h('dd', {}, `${c.engine} ${c.engine_version_actual || c.engine_version}`),
        h('dt', {}, 'Mode'), h('dd', {}, c.cluster_mode === 'enabled' ? 'cluster mode' : 'primary/replica'),
        h('dt', {}, 'Node type'), h('dd', {}, c.node_type),
        h('dt', {}, 'Shards × nodes'), h('dd', {}, shape(c)),
        h('dt', {}, 'Multi-AZ'), h('dd', {}, c.multi_az ? 'yes' : 'no'),
        h('dt', {}, 'Maintenance window'), h('dd', {}, c.maintenance_window),
        h('dt', {}, 'Endpoints'), h('dd', {}, endpoints(c)),
        h('dt', {}, 'Tags'), h('dd', {}, tags(c.tags).length ? tags(c.tags) : h('span', { class: 'muted' }, 'none')))),
    h('h2', {}, 'Topology'),
    h('div', { class: 'shards' },
      (c.shards || []).map((s) => h('section', { class: 'panel shard', 'aria-label': `Shard ${s.id}` },
        h('h3', {}, `Shard ${s.id}`, s.slots && s.slots.length ? h('span', { class: 'muted' }, ` slots ${s.slots.join(', ')}`) : null),
        s.nodes.map(node)))),
    h('h2', {}, 'Operations'),
    table('Operations', [['Kind'], ['Status'], ['Step'], ['Progress'], ['Started', 'optional'],
      ['Finished', 'optional'], ['Error']], operations.map(operationRow), 'No operations yet.'),
    h('h2', {}, 'Events of the last day'),
    table('Events', [['Time'], ['Type'], ['Message']], events.map(eventRow), 'No events yet.'));
}
