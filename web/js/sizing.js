// sizing.js -- "size it for me" on the create page: workload figures go to
// POST /v1/sizing, its options come back as a table, and Use fills the
// create form with the option's cluster_spec (the form stays the user's to
// change). The API's refusals are shown next to their fields.

import { api } from './api.js';
import { h, show } from './dom.js';
import { clearErrors, field, formAlert, input, select, showErrors } from './form.js';
import { money } from './format.js';

/* A number as typed (the API names a field that is not one), or absent. */
function num(control) {
  const v = control.value.trim();
  if (v === '') return undefined;
  return Number.isFinite(Number(v)) ? Number(v) : v;
}

function optionsTable(out, use) {
  if (!out.options.length)
    return h('div', { class: 'muted', role: 'status' },
      'Nothing fits: ', out.reasons.join('; '), '.');
  return h('table', { 'aria-label': 'Sizing options' },
    h('thead', {}, h('tr', {}, ['#', 'Node type', 'Shape', 'A month', 'Memory free', 'Primary load', 'Warnings', '']
      .map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, out.options.map((o) => {
      const load = o.throughput.capacity_per_node_rps
        ? `${Math.round(100 * o.throughput.needed_per_primary_rps / o.throughput.capacity_per_node_rps)}%` : '—';
      return h('tr', {},
        h('td', {}, String(o.rank)),
        h('td', {}, o.node_type),
        h('td', {}, `${o.cluster_mode === 'enabled' ? `${o.num_shards} shard${o.num_shards > 1 ? 's' : ''}` : 'one group'}` +
          ` × (1 + ${o.replicas_per_shard})${o.multi_az ? ', Multi-AZ' : ''}`),
        h('td', {}, money(o.price_usd_per_month)),
        h('td', {}, `${o.memory.free_gib} of ${o.memory.node_gib} GiB`),
        h('td', {}, load),
        h('td', { title: o.warnings.join('\n') }, o.warnings.length ? String(o.warnings.length) : '—'),
        h('td', {}, h('button', { type: 'button', onclick: () => use(o) }, `Use option ${o.rank}`)));
    })));
}

/** The sizing panel; use(spec) fills the create form with an option's spec. */
export function sizingPanel(current, use) {
  const f = {
    data_gib: field('data_gib', 'Dataset (GiB)', input({ inputmode: 'decimal', placeholder: '20' }),
      'Keys and values; or give the number of keys and their sizes instead.'),
    keys: field('keys', 'Keys', input({ inputmode: 'numeric' })),
    avg_key_bytes: field('avg_key_bytes', 'Average key (bytes)', input({ inputmode: 'numeric' })),
    avg_value_bytes: field('avg_value_bytes', 'Average value (bytes)', input({ inputmode: 'numeric' })),
    requests_per_second: field('requests_per_second', 'Peak requests/s', input({ inputmode: 'numeric', placeholder: '50000' })),
    read_ratio: field('read_ratio', 'Reads (share)', input({ inputmode: 'decimal', value: '0.8' })),
    availability: field('availability', 'Availability', select([['standard', 'standard: one replica'],
      ['production', 'production: two replicas, other zones'], ['none', 'none: no replica']], 'standard')),
    cluster_mode: field('cluster_mode', 'Sharding', select([['any', 'either'], ['enabled', 'cluster mode enabled'],
      ['disabled', 'cluster mode disabled']], 'any')),
    max_monthly_usd: field('max_monthly_usd', 'Budget a month (USD)', input({ inputmode: 'decimal' })),
  };
  const alert = formAlert();
  const results = h('div', { class: 'sizing-results', 'aria-live': 'polite' });
  const suggest = h('button', { type: 'submit' }, 'Suggest sizes');
  const form = h('form', { class: 'sizing', 'aria-label': 'Size from your workload', novalidate: true },
    h('div', { class: 'grid' }, Object.values(f).map((x) => x.el)), alert,
    h('div', { class: 'buttons' }, suggest), results);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = { ...current() };
    for (const [k, x] of Object.entries(f)) {
      const v = x.control.tagName === 'SELECT' ? x.control.value : num(x.control);
      if (v !== undefined) body[k] = v;
    }
    suggest.disabled = true;
    try {
      const out = await api('POST', '/v1/sizing', body);
      clearErrors(form);
      show(results, optionsTable(out, (o) => use(o.cluster_spec)));
    } catch (e) {
      show(results);
      showErrors(form, e);
    } finally {
      suggest.disabled = false;
    }
  });
  return h('details', { class: 'panel sizing-panel' },
    h('summary', {}, 'Size it from your workload'), form);
}
