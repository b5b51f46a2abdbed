// format.js -- how the console writes the API's values: statuses with
// their word and colour, shapes of clusters, operations in progress.

import { h } from './dom.js';

export function statusBadge(status) {
  return h('span', { class: `status ${status}` }, status);
}

/** "3 × (1 + 1)": shards, each a primary and its replicas. */
export function shape(c) {
  return `${c.num_shards} × (1 + ${c.replicas_per_shard})`;
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
