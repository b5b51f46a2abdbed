// format.js -- how the console writes the API's values: statuses with
// their word and colour, shapes and modes of clusters (and of snapshots),
// operations in progress, counts and bytes.

import { h } from './dom.js';

/** A status in its word and colour; kind 'op-' gives an operation's
 *  colours (a running operation is busy, not healthy). */
export function statusBadge(status, kind = '') {
  return h('span', { class: `status ${kind}${status}` }, status);
}

/** A button that copies text; what names it for screen readers. */
export function copyButton(text, what) {
  return h('button', { type: 'button', class: 'plain', 'aria-label': `Copy ${what}`,
                       onclick: () => navigator.clipboard && navigator.clipboard.writeText(text) }, 'Copy');
}

/** "3 × (1 + 1)": shards, each a primary and its replicas. */
export function shape(c) {
  return `${c.num_shards} × (1 + ${c.replicas_per_shard})`;
}

/** A cluster's (or a snapshot's) cluster_mode in words. */
export function mode(c) {
  return c.cluster_mode === 'enabled' ? 'cluster mode' : 'primary/replica';
}

/** The current operation with its step and progress, or nothing. */
export function operation(op) {
  if (!op) return null;
  return h('span', { class: 'muted' },
    ` ${op.kind}: ${op.step_name || op.status} `,
    h('progress', { max: 100, value: op.progress || 0, 'aria-label': `${op.kind} progress` }),
    ` ${op.progress || 0}%`);
}

export function tags(t) {
  return Object.entries(t || {}).map(([k, v]) => h('span', { class: 'tag' }, `${k}: ${v}`));
}

const usd = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', maximumFractionDigits: 2 });
const usdFine = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', maximumFractionDigits: 4 });

/** Dollars: cents for sums, finer for hourly prices below a dollar. */
export function money(v) {
  return (v < 1 ? usdFine : usd).format(v);
}

const whole = new Intl.NumberFormat('en-US');

/** A count with its thousands marked: 100,000; '—' when not known. */
export function count(n) {
  return n === null || n === undefined ? '—' : whole.format(n);
}

/** Bytes in binary units: 1.5 GiB. */
export function bytes(n) {
  if (n === null || n === undefined) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  for (; Math.abs(n) >= 1024 && i < units.length - 1; i++) n /= 1024;
  return `${i ? n.toFixed(1) : n} ${units[i]}`;
}

/** A cluster's pages, the current one marked. */
export function clusterTabs(id, current) {
  const base = `#/clusters/${encodeURIComponent(id)}`;
  const tab = (href, text) => h('a', { href, 'aria-current': text === current ? 'page' : null }, text);
  return h('nav', { class: 'tabs', 'aria-label': 'Cluster' }, tab(base, 'Overview'), tab(`${base}/metrics`, 'Metrics'));
}
