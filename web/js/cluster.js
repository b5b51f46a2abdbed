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

export async function renderCluster(main, id) {
  const c = await get(`/v1/clusters/${encodeURIComponent(id)}`);
  show(main,
    h('h1', {}, c.id, ' ', statusBadge(c.status), operation(c.current_operation)),
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
        s.nodes.map(node)))));
}
