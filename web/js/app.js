// app.js -- the console's entry: sign-in gate, hash routes, the header.
// Pages: #/clusters (the list), #/create (a new cluster), #/clusters/<id>
// (one cluster), #/clusters/<id>/metrics (its dashboards), #/snapshots
// (the backups) and #/snapshots/<id> (one), #/hosts (the fleet) and
// #/tokens (admin tokens only).

import { canChange, identity, signOut, token, ApiError, READ_ONLY } from './api.js';
import { alertLine, h, show } from './dom.js';
import { renderSignIn } from './signin.js';
import { renderClusters } from './clusters.js';
import { renderCluster } from './cluster.js';
import { renderCreate } from './create.js';
import { renderHosts } from './fleet.js';
import { renderSnapshot, renderSnapshots } from './snapshots.js';
import { renderTokens } from './tokens.js';

const main = document.getElementById('main');
const out = document.getElementById('sign-out');
const who = document.getElementById('who');
const adminLinks = document.querySelectorAll('[data-admin]');

/* A segment of the hash as typed: a bad escape (%ff) stays as it is, for
 * the API to refuse, instead of stopping the page. */
function decode(segment) {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function route() {
  const [path, query] = (location.hash.slice(1) || '/clusters').split('?');
  return { parts: path.split('/').filter(Boolean).map(decode),
           params: Object.fromEntries(new URLSearchParams(query || '')) };
}

/* Pages only an admin token may open; a read token is told why. */
const ADMIN_PAGES = { create: renderCreate, hosts: renderHosts, tokens: renderTokens };

async function page(parts, params) {
  if (ADMIN_PAGES[parts[0]]) {
    if (!canChange()) return show(main, h('p', { class: 'muted', role: 'status' }, READ_ONLY));
    return ADMIN_PAGES[parts[0]](main, params);
  }
  if (parts[0] === 'clusters' && parts[2] === 'metrics') {
    // The dashboards and uPlot run only once opened (index.html fetched them).
    return (await import('./dashboard.js')).renderDashboard(main, parts[1], params);
  }
  if (parts[0] === 'clusters' && parts[1]) return renderCluster(main, parts[1]);
  if (parts[0] === 'snapshots') return parts[1] ? renderSnapshot(main, parts[1]) : renderSnapshots(main, params);
  return renderClusters(main, params);
}

async function render() {
  if (!token()) {
    out.hidden = true;
    who.textContent = '';
    renderSignIn(main, render);
    return;
  }
  const { parts, params } = route();
  try {
    const me = await identity();
    out.hidden = false;
    who.textContent = `${me.name} · ${me.scope === 'admin' ? 'admin' : 'read-only'}`;
    for (const a of adminLinks) a.hidden = !canChange();
    await page(parts, params);
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      signOut();
      render();
      return;
    }
    show(main, alertLine(e.message));
  }
  main.focus();
}

out.addEventListener('click', () => {
  signOut();
  location.hash = '#/clusters';
  render();
});
window.addEventListener('hashchange', render);
render();
