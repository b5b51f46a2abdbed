// clusters.js -- the clusters list: filter by status, engine and tag;
// pages as the API pages them.

import { canChange, get } from './api.js';
import { h, show } from './dom.js';
import { mode, operation, shape, statusBadge, tags } from './format.js';

const STATUSES = ['', 'creating', 'available', 'modifying', 'degraded', 'deleting', 'create-failed'];

function filterField(id, text, control) {
  return h('div', {}, h('label', { for: id }, text), control);
}

function row(c) {
  return h('tr', {},
    h('td', {}, h('a', { href: `#/clusters/${encodeURIComponent(c.id)}` }, c.id)),
    h('td', {}, `${c.engine} ${c.engine_version_actual || c.engine_version}`),
    h('td', { class: 'optional' }, mode(c)),
    h('td', { class: 'optional' }, c.node_type),
    h('td', {}, shape(c)),
    h('td', {}, statusBadge(c.status), operation(c.current_operation)),
    h('td', { class: 'optional' }, tags(c.tags)));
}

export async function renderClusters(main, params) {
  const status = h('select', { id: 'f-status' },
    STATUSES.map((s) => h('option', { value: s, selected: s === (params.status || '') }, s || 'any')));
  const engine = h('select', { id: 'f-engine' },
    ['', 'valkey', 'redis'].map((s) => h('option', { value: s, selected: s === (params.engine || '') }, s || 'any')));
  const tag = h('input', { id: 'f-tag', placeholder: 'key:value', value: params.tag || '' });
  const apply = () => {
    const q = new URLSearchParams();
    if (status.value) q.set('status', status.value);
    if (engine.value) q.set('engine', engine.value);
    if (tag.value.trim()) q.set('tag', tag.value.trim());
    location.hash = `#/clusters${q.toString() ? `?${q}` : ''}`;
  };
  const filters = h('form', { class: 'filters', 'aria-label': 'Filters', onsubmit: (e) => { e.preventDefault(); apply(); } },
    filterField('f-status', 'Status', status), filterField('f-engine', 'Engine', engine),
    filterField('f-tag', 'Tag', tag), h('button', { type: 'submit' }, 'Filter'));
  const body = h('tbody');
  const pager = h('div', { class: 'pager' });
  show(main, h('div', { class: 'heading' }, h('h1', {}, 'Clusters'),
    canChange() ? h('a', { class: 'button', href: '#/create' }, 'Create cluster') : null), filters,
    h('table', { 'aria-label': 'Clusters' },
      h('thead', {}, h('tr', {}, h('th', {}, 'ID'), h('th', {}, 'Engine'),
        h('th', { class: 'optional' }, 'Mode'), h('th', { class: 'optional' }, 'Node type'),
        h('th', {}, 'Shards × nodes'), h('th', {}, 'Status'), h('th', { class: 'optional' }, 'Tags'))),
      body),
    pager);

  const page = await get('/v1/clusters', {
    status: params.status, engine: params.engine, tag: params.tag,
    page_size: 50, page_token: params.page_token,
  });
  show(body, page.clusters.length
    ? page.clusters.map(row)
    : h('tr', {}, h('td', { colspan: 7, class: 'muted' }, 'No clusters match.')));
  if (page.next_page_token) {
    const q = new URLSearchParams(params);
    q.set('page_token', page.next_page_token);
    show(pager, h('a', { href: `#/clusters?${q}` }, 'Next page'));
  }
}
