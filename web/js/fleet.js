// fleet.js -- the hosts (VMs running cairn-agent): AZ, status, capacity
// and what is allocated on it, the engines installed. Admin tokens only,
// as the API says.

import { getAll } from './api.js';
import { h, show, table } from './dom.js';
import { statusBadge } from './format.js';

function bar(used, total, unit, what) {
  const pct = total ? Math.round((100 * used) / total) : 0;
  return h('div', { class: 'bar' },
    h('meter', { min: 0, max: total || 1, value: used, high: total * 0.85, 'aria-label': `${what} allocated` }),
    ` ${used} / ${total} ${unit} (${pct}%)`);
}

const gib = (mib) => Math.round(mib / 102.4) / 10;

function row(x) {
  const engines = (x.engines || []).map((e) => h('span', { class: 'tag' }, `${e.engine} ${e.full_version || e.version}`));
  return h('tr', {},
    h('td', {}, x.name, h('div', { class: 'muted mono' }, x.address)),
    h('td', {}, x.az),
    h('td', {}, statusBadge(x.status)),
    h('td', {}, bar(x.allocated.vcpus, x.capacity.vcpus, 'vCPUs', 'vCPUs')),
    h('td', {}, bar(gib(x.allocated.memory_mib), gib(x.capacity.memory_mib), 'GiB', 'memory')),
    h('td', {}, x.allocated.nodes),
    h('td', { class: 'optional' }, engines.length ? engines : h('span', { class: 'muted' }, 'none reported')),
    h('td', { class: 'optional mono' }, x.last_seen_at || 'never'));
}

export async function renderHosts(main) {
  const hosts = await getAll('/v1/hosts', 'hosts');
  const azs = [...new Set(hosts.map((x) => x.az))].sort();
  const healthy = hosts.filter((x) => x.status === 'healthy').length;
  show(main,
    h('h1', {}, 'Fleet'),
    h('p', { class: 'muted' }, `${hosts.length} host${hosts.length === 1 ? '' : 's'} in ${azs.length} availability zone${azs.length === 1 ? '' : 's'} (${azs.join(', ')}); ${healthy} healthy.`),
    table('Hosts', ['Host', 'AZ', 'Status', 'vCPUs', 'Memory', 'Nodes', ['Engines installed', 'optional'],
      ['Last seen', 'optional']], hosts.map(row), 'No host has registered yet: start cairn-agent on a VM.'));
}
