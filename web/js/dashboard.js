// dashboard.js -- a cluster's metrics: the charts ElastiCache shows by
// default over a time range, across nodes or one line per node, with the
// cluster's failovers, upgrades and node replacements marked on them; its
// hot slots, and the report of its last engine upgrade. API only.
//
// Route: #/clusters/<id>/metrics?range=1h|3h|12h|1d|1w|custom[&start=&end=]
// [&stat=Average|Maximum|p99][&by=node] (these two set every chart)
// [&charts=Name,Name...] (only those charts of the default set).

import { api, get, ApiError } from './api.js';
import { alertLine, h, show, table } from './dom.js';
import { clusterTabs } from './format.js';
import { Chart, formatValue } from './chart.js';

// ElastiCache's default charts of a cluster, in its order; those the
// catalog lacks are left out.
const CHARTS = ['EngineCPUUtilization', 'CPUUtilization', 'DatabaseMemoryUsagePercentage',
  'BytesUsedForCache', 'CurrConnections', 'NewConnections', 'CacheHits', 'CacheMisses',
  'CacheHitRate', 'Evictions', 'GetTypeCmds', 'SetTypeCmds', 'GetTypeCmdsLatency',
  'SetTypeCmdsLatency', 'ReplicationLag', 'NetworkBytesIn', 'NetworkBytesOut'];

const STATS = ['Average', 'Maximum', 'p99'];

const RANGES = [
  { key: '1h', label: 'Last hour', seconds: 3600 },
  { key: '3h', label: 'Last 3 hours', seconds: 3 * 3600 },
  { key: '12h', label: 'Last 12 hours', seconds: 12 * 3600 },
  { key: '1d', label: 'Last day', seconds: 86400 },
  { key: '1w', label: 'Last week', seconds: 7 * 86400 },
  { key: 'custom', label: 'Custom', seconds: 0 },
];

// The periods a query may use, smallest first: 60 s samples, then the
// 5-minute and hourly rollups and multiples of them.
const PERIODS = [60, 300, 3600, 6 * 3600, 86400];
const MAX_POINTS = 1440;
const REFRESH_MS = 60e3;
// Queries per POST /v1/metrics/query (the API takes 20): a few calls at
// once let the first charts draw while cairnd reads the rest.
const QUERIES_PER_CALL = 5;
const EVENT_PAGES = 10;

// The events drawn on the charts: their kind (the marker's colour) and
// letter.
const MARKERS = {
  FailoverComplete: ['failover', 'F'],
  FailoverForced: ['failover', 'F'],
  PrimaryDemoted: ['failover', 'D'],
  PrimaryFenced: ['failover', 'D'],
  EngineUpgradeStarted: ['upgrade', 'U'],
  EngineUpgradeComplete: ['upgrade', 'U'],
  EngineUpgradeFailed: ['upgrade', 'U'],
  EngineUpgradeCancelled: ['upgrade', 'U'],
  NodeReplacing: ['replacement', 'R'],
  NodeReplaced: ['replacement', 'R'],
  NodeReplacementCancelled: ['replacement', 'R'],
};

/** The query window for [from, to] (epoch s): the smallest period that
 *  keeps a series within 1,440 points, and start and end on its multiples
 *  (cairnd's buckets start there), end at or after to. */
export function queryWindow(from, to) {
  for (const period of PERIODS) {
    const end = Math.ceil(to / period) * period;
    const start = end - Math.ceil((to - from) / period) * period;
    if ((end - start) / period <= MAX_POINTS) return { start, end, period };
  }
  const period = PERIODS[PERIODS.length - 1];
  const end = Math.ceil(to / period) * period;
  return { start: end - MAX_POINTS * period, end, period };
}

function localTime(epochS) {
  const d = new Date(epochS * 1000);
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} `
    + `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/* datetime-local's value (local time, minutes) and back. */
function toInput(epochS) {
  return localTime(epochS).slice(0, 16).replace(' ', 'T');
}

function fromInput(value) {
  const t = new Date(value).getTime();
  return Number.isNaN(t) ? null : Math.floor(t / 1000);
}

function epoch(iso) {
  return Date.parse(iso) / 1000;
}

/* ---- the nodes, as the per-node lines are labelled ---------------------------- */

/** node id -> {label, order}: "0001 primary 3f2a9c01", by shard, primary first. */
function nodeLabels(cluster) {
  const out = new Map();
  let order = 0;
  for (const s of cluster.shards || []) {
    const nodes = [...s.nodes].sort((a, b) => (a.role === 'primary' ? 0 : 1) - (b.role === 'primary' ? 0 : 1));
    for (const n of nodes) out.set(n.id, { label: `${s.id} ${n.role || 'node'} ${n.id.slice(0, 8)}`, order: order++ });
  }
  return out;
}

/* ---- series: the API's points on the window's grid ----------------------------- */

/** One chart's view of a query result (format columns): xs every period over the window,
 *  each series' values on it (null where a bucket has none). */
function chartView(result, win, labels, markers) {
  const n = (win.end - win.start) / win.period;
  const xs = new Array(n);
  for (let i = 0; i < n; i++) xs[i] = win.start + i * win.period;
  const series = result.series.map((s) => {
    const values = new Array(n).fill(null);
    s.timestamps.forEach((t, k) => {
      const i = Math.round((t - win.start) / win.period);
      if (i >= 0 && i < n) values[i] = s.values[k];
    });
    const node = s.node_id ? labels.get(s.node_id) : null;
    return { label: s.node_id ? (node ? node.label : `gone ${s.node_id.slice(0, 8)}`) : result.stat,
             order: node ? node.order : Infinity, values, points: s.values.length };
  });
  series.sort((a, b) => a.order - b.order || a.label.localeCompare(b.label));
  return { range: [win.start, win.end], xs, series, markers };
}

/* ---- events: the markers ------------------------------------------------------- */

/** The cluster's events of MARKERS' types in [start, end], oldest first,
 *  as markers {t, kind, letter, text, event}. */
async function loadMarkers(id, win) {
  const found = [];
  let token;
  for (let page = 0; page < EVENT_PAGES; page++) {
    const r = await get('/v1/events', { cluster_id: id, since: new Date(win.start * 1000).toISOString(),
                                        page_size: 1000, page_token: token });
    for (const e of r.events) {
      const t = epoch(e.created_at);
      if (MARKERS[e.type] && t <= win.end) {
        const [kind, letter] = MARKERS[e.type];
        found.push({ t, kind, letter, text: `${localTime(t)} ${e.type}: ${e.message}`, event: e });
      }
    }
    token = r.next_page_token;
    if (!token) break;
  }
  return found;
}

function markerRows(markers) {
  if (!markers.length)
    return h('tr', {}, h('td', { colspan: 3, class: 'muted' }, 'No failovers, upgrades or node replacements in this range.'));
  return markers.map((m) => h('tr', {},
    h('td', { class: 'mono' }, localTime(m.t)),
    h('td', {}, h('span', { class: `marker ${m.kind}`, 'aria-hidden': 'true' }, m.letter), ' ', m.event.type),
    h('td', {}, m.event.message)));
}

/* ---- hot slots ----------------------------------------------------------------- */

function hottest(s) {
  return s.hottest.slice(0, 3).map((x) => `${x.slot} (${x.cpu_usec !== undefined ? `${x.cpu_usec} µs` : `${x.key_count} keys`})`).join(', ');
}

function advice(s) {
  if (!s.advice) return h('span', { class: 'muted' }, s.hot ? 'no move would help' : '—');
  const a = s.advice;
  return `Move slots ${a.move_slots.join(', ')} to shard ${a.to_shard} (load after ${trimNum(a.load_after)}): ${a.reason}`;
}

function trimNum(v) {
  return v === null || v === undefined ? '–' : Number(Number(v).toPrecision(4)).toString();
}

async function hotSlots(id) {
  let stats;
  try {
    stats = await get(`/v1/clusters/${encodeURIComponent(id)}/slot-stats`);
  } catch (e) {
    if (e instanceof ApiError && e.code === 'NOT_SUPPORTED_BY_ENGINE')
      return h('p', { class: 'muted' }, `Hot slots are not shown for this cluster: ${e.message}.`);
    return alertLine(`Could not read the slot statistics: ${e.message}`);
  }
  const measure = stats.load_measure === 'cpu-usec' ? 'CPU µs' : 'keys';
  return [
    h('p', { class: 'muted' }, `Load is measured in ${measure}; the shards' mean is ${trimNum(stats.mean_load)}. `
      + 'A shard above 1.2 times the mean is hot.'),
    table('Hot slots', ['Shard', 'Slots', 'Keys', `Load (${measure})`, 'Hot', 'Hottest slots', 'Advice'],
      stats.shards.map((s) => h('tr', {},
        h('td', {}, s.id), h('td', {}, s.slots), h('td', {}, s.key_count), h('td', {}, trimNum(s.load)),
        h('td', {}, s.hot ? h('span', { class: 'status degraded' }, 'hot') : 'no'),
        h('td', { class: 'mono' }, hottest(s)), h('td', {}, advice(s))))),
  ];
}

/* ---- the last upgrade's report -------------------------------------------------- */

async function upgradeReport(id, units) {
  let report, op;
  try {
    const ops = await get('/v1/operations', { cluster_id: id, kind: 'upgrade_engine', page_size: 20 });
    const ended = ops.operations.find((o) => o.finished_at);
    if (!ended) return h('p', { class: 'muted' }, 'No engine upgrade of this cluster has ended yet.');
    op = await get(`/v1/operations/${encodeURIComponent(ended.id)}`);
    report = op.report;
  } catch (e) {
    return alertLine(`Could not read the upgrade report: ${e.message}`);
  }
  if (!report) return h('p', { class: 'muted' }, `The upgrade that ended ${op.finished_at} has no report.`);
  const version = (v) => (v ? `${v.engine} ${v.engine_version}` : '?');
  const pauses = (report.write_pauses || []).map((p) => `shard ${p.shard}: ${p.write_pause_ms} ms`).join(', ');
  return [
    h('p', {}, `${version(report.from)} → ${version(report.to)}, ${op.status}, ended ${localTime(epoch(op.finished_at))}`,
      report.duration_ms !== undefined ? `, took ${(report.duration_ms / 1000).toFixed(1)} s` : '',
      pauses ? `; write pauses ${pauses}` : '', '.'),
    h('p', { class: 'muted' }, `Cluster averages over the hour before it started (${localTime(report.before.start)} to `
      + `${localTime(report.before.end)}) and the hour after it ended (to ${localTime(report.after.end)}).`),
    table('Upgrade report', ['Metric', 'Before', 'After', 'Change'],
      Object.entries(report.metrics).map(([name, m]) => {
        const unit = units.get(name);
        const fmt = (v) => (unit ? formatValue(unit, v) : trimNum(v));
        const change = m.change_percent === null ? '–' : `${m.change_percent > 0 ? '+' : ''}${m.change_percent.toFixed(1)}%`;
        return h('tr', {}, h('td', {}, name), h('td', {}, fmt(m.before)), h('td', {}, fmt(m.after)),
          h('td', {}, change));
      })),
  ];
}

/* ---- one chart's figure ---------------------------------------------------------- */

function chartFigure(metric, defaults, onChange) {
  const id = `chart-${metric.name}`;
  const stat = h('select', { id: `${id}-stat`, 'aria-label': `${metric.name} statistic` },
    STATS.map((s) => h('option', { value: s, selected: s === defaults.stat }, s)));
  const perNode = h('input', { type: 'checkbox', id: `${id}-node`, checked: defaults.byNode,
                               'aria-label': `${metric.name} per node` });
  const plot = h('div', { class: 'plot' });
  const note = h('p', { class: 'muted empty', hidden: true });
  const figure = h('figure', { class: 'panel chart', id, 'aria-label': metric.name, 'data-unit': metric.unit,
                               'data-points': 0, 'data-series': 0, 'data-markers': 0 },
    h('div', { class: 'chart-head' },
      h('figcaption', { title: metric.description }, metric.name),
      h('div', { class: 'chart-controls' },
        stat,
        h('label', { class: 'inline', for: `${id}-node` }, perNode, 'Per node'))),
    plot, note);
  const c = { metric, figure, plot, note, chart: new Chart(plot, metric.unit),
              stat: () => stat.value, byNode: () => perNode.checked };
  stat.addEventListener('change', () => onChange(c));
  perNode.addEventListener('change', () => onChange(c));
  return c;
}

function drawChart(c, view) {
  c.chart.draw(view);
  const points = view.series.reduce((n, s) => n + s.points, 0);
  const inRange = view.markers.filter((m) => m.t >= view.range[0] && m.t <= view.range[1]).length;
  c.figure.dataset.points = points;
  c.figure.dataset.series = view.series.length;
  c.figure.dataset.markers = inRange;
  c.note.hidden = points > 0;
  c.note.textContent = 'No datapoints in this range.';
}

function chartError(c, message) {
  c.figure.dataset.points = 0;
  c.note.hidden = false;
  c.note.textContent = `Could not load ${c.metric.name}: ${message}`;
}

/* ---- the page ------------------------------------------------------------------- */

export async function renderDashboard(main, id, params = {}) {
  const [cluster, catalog] = await Promise.all([
    get(`/v1/clusters/${encodeURIComponent(id)}`), get('/v1/metrics/catalog')]);
  const byName = new Map(catalog.metrics.map((m) => [m.name, m]));
  const units = new Map(catalog.metrics.map((m) => [m.name, m.unit]));
  const defaults = { stat: STATS.includes(params.stat) ? params.stat : 'Average', byNode: params.by === 'node' };
  const state = { cluster, labels: nodeLabels(cluster), seq: 0, drawn: false, timer: null };

  // Controls: the range, a custom range, auto-refresh.
  const now = Math.floor(Date.now() / 1000);
  const initial = RANGES.find((r) => r.key === params.range) || RANGES[0];
  const range = h('select', { id: 'd-range' },
    RANGES.map((r) => h('option', { value: r.key, selected: r === initial }, r.label)));
  const from = h('input', { id: 'd-from', type: 'datetime-local',
                            value: toInput(Number(params.start) || now - 3600) });
  const to = h('input', { id: 'd-to', type: 'datetime-local', value: toInput(Number(params.end) || now) });
  const custom = h('fieldset', { class: 'custom', hidden: initial.key !== 'custom' },
    h('legend', {}, 'Custom range (local time)'),
    h('div', {}, h('label', { for: 'd-from' }, 'From'), from),
    h('div', {}, h('label', { for: 'd-to' }, 'To'), to));
  const auto = h('input', { id: 'd-auto', type: 'checkbox', checked: initial.key !== 'custom',
                            disabled: initial.key === 'custom' });
  const controls = h('form', { class: 'filters', 'aria-label': 'Time range' },
    h('div', {}, h('label', { for: 'd-range' }, 'Range'), range),
    custom,
    h('div', {}, h('label', { class: 'inline', for: 'd-auto' }, auto, 'Auto-refresh every 60 s')),
    h('button', { type: 'submit' }, 'Refresh'));
  const status = h('p', { class: 'muted', role: 'status' });
  const errors = h('div');

  const only = params.charts ? params.charts.split(',') : null;
  const metrics = CHARTS.filter((n) => byName.has(n) && (!only || only.includes(n))).map((n) => byName.get(n));
  const charts = metrics.map((m) => chartFigure(m, defaults, (c) => state.win && loadCharts([c])));
  const markerTable = h('tbody');
  const slots = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const upgrade = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const root = h('div', { class: 'dashboard', 'data-state': 'loading' },
    h('h1', {}, id), clusterTabs(id, 'Metrics'),
    controls, status, errors,
    h('div', { class: 'charts' }, charts.map((c) => c.figure)),
    h('h2', {}, 'Failovers, upgrades and node replacements'),
    table('Events on the charts', ['Time', 'Event', 'Message'], markerTable),
    h('h2', {}, 'Hot slots'), slots,
    h('h2', {}, 'Last engine upgrade'), upgrade);
  show(main, root);

  const resize = new ResizeObserver((entries) => {
    for (const e of entries) charts.find((c) => c.plot === e.target)?.chart.resize(e.contentRect.width);
  });
  for (const c of charts) resize.observe(c.plot);

  function currentWindow() {
    if (range.value === 'custom') {
      const f = fromInput(from.value), t = fromInput(to.value);
      if (f === null || t === null || t <= f) return null;
      return queryWindow(f, t);
    }
    const r = RANGES.find((x) => x.key === range.value);
    const t = Math.floor(Date.now() / 1000);
    return queryWindow(t - r.seconds, t);
  }

  // The page's address says what it shows, without a new render.
  function remember() {
    const q = new URLSearchParams({ range: range.value });
    if (range.value === 'custom') {
      q.set('start', String(fromInput(from.value) ?? ''));
      q.set('end', String(fromInput(to.value) ?? ''));
    }
    if (defaults.stat !== 'Average') q.set('stat', defaults.stat);
    if (defaults.byNode) q.set('by', 'node');
    if (only) q.set('charts', only.join(','));
    history.replaceState(null, '', `#/clusters/${encodeURIComponent(id)}/metrics?${q}`);
  }

  /* Query the charts in list, in parallel calls, and draw each as its
   * results come. Resolves once all have drawn (or failed). */
  async function loadCharts(list, win = state.win, markers = Promise.resolve(state.markers)) {
    const seq = state.seq;
    const calls = [];
    for (let i = 0; i < list.length; i += QUERIES_PER_CALL) {
      const batch = list.slice(i, i + QUERIES_PER_CALL);
      calls.push(Promise.all([api('POST', '/v1/metrics/query', {
        start: String(win.start), end: String(win.end), period: win.period, format: 'columns',
        queries: batch.map((c) => ({ id: c.metric.name, cluster_id: id, name: c.metric.name,
                                     stat: c.stat(), group_by: c.byNode() ? 'node' : null })),
      }), markers]).then(([r, marks]) => {
        if (seq !== state.seq) return;
        r.results.forEach((res, k) => {
          if (res.error) chartError(batch[k], res.error.message);
          else drawChart(batch[k], chartView(res, win, state.labels, marks));
        });
      }, (e) => {
        if (seq !== state.seq) return;
        for (const c of batch) chartError(c, e.message);
        throw e;
      }));
    }
    const outcomes = await Promise.allSettled(calls);
    const failed = outcomes.find((o) => o.status === 'rejected');
    if (failed && seq === state.seq) show(errors, alertLine(`Could not load the metrics: ${failed.reason.message}`));
  }

  /* Everything at once: the cluster (its nodes' roles label the lines),
   * the events (the markers) and the charts, each chart drawn as soon as
   * its call and the markers are in. */
  async function refresh(fresh = get(`/v1/clusters/${encodeURIComponent(id)}`)) {
    const win = currentWindow();
    if (!win) {
      show(errors, alertLine('The custom range needs a start before its end.'));
      return;
    }
    const seq = ++state.seq;
    root.dataset.state = 'loading';
    show(errors);
    status.textContent = 'Loading…';
    state.win = win;
    const markers = loadMarkers(id, win).catch((e) => {
      show(errors, alertLine(`Could not read the cluster's events: ${e.message}`));
      return [];
    });
    const labelled = fresh.then((c) => {
      state.cluster = c;
      state.labels = nodeLabels(c);
    }, () => {});   // the labels of the last read do
    const charted = loadCharts(charts, win, Promise.all([markers, labelled]).then(([m]) => m));
    state.markers = await markers;
    if (seq !== state.seq) return;
    show(markerTable, markerRows(state.markers));
    await charted;
    if (seq !== state.seq) return;
    root.dataset.state = 'drawn';
    if (!state.drawn) {
      state.drawn = true;
      performance.mark('cairn:dashboard-drawn');
    }
    status.textContent = `${localTime(win.start)} to ${localTime(win.end)}, one point per `
      + `${win.period >= 3600 ? `${win.period / 3600} h` : win.period >= 60 ? `${win.period / 60} min` : `${win.period} s`}`
      + ` (times in your time zone). Updated ${localTime(Math.floor(Date.now() / 1000)).slice(11)}.`;
    show(slots, await hotSlots(id));
    show(upgrade, await upgradeReport(id, units));
  }

  range.addEventListener('change', () => {
    const isCustom = range.value === 'custom';
    custom.hidden = !isCustom;
    auto.disabled = isCustom;
    auto.checked = !isCustom;
    remember();
    if (!isCustom) refresh();
  });
  controls.addEventListener('submit', (e) => {
    e.preventDefault();
    remember();
    refresh();
  });
  // Auto-refresh; the timer ends itself once the page has been left.
  state.timer = setInterval(() => {
    if (!root.isConnected) {
      clearInterval(state.timer);
      resize.disconnect();
      for (const c of charts) c.chart.destroy();
      return;
    }
    if (auto.checked && range.value !== 'custom') refresh();
  }, REFRESH_MS);
  remember();
  await refresh(Promise.resolve(cluster));
}
