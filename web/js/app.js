// app.js -- the console's entry: sign-in gate, hash routes, the header.
// Pages: #/clusters (the list), #/clusters/<id> (one cluster).

import { signOut, token, ApiError } from './api.js';
import { h, show } from './dom.js';
import { renderSignIn } from './signin.js';
import { renderClusters } from './clusters.js';
import { renderCluster } from './cluster.js';

const main = document.getElementById('main');
const out = document.getElementById('sign-out');

function route() {
  const [path, query] = (location.hash.slice(1) || '/clusters').split('?');
  return { parts: path.split('/').filter(Boolean).map(decodeURIComponent),
           params: Object.fromEntries(new URLSearchParams(query || '')) };
}

async function render() {
  if (!token()) {
    out.hidden = true;
    renderSignIn(main, render);
    return;
  }
  out.hidden = false;
  const { parts, params } = route();
  try {
    if (parts[0] === 'clusters' && parts[2] === 'metrics') await (await import('./dashboard.js')).renderDashboard(main, parts[1], params);
    else if (parts[0] === 'clusters' && parts[1]) await renderCluster(main, parts[1]);
    else await renderClusters(main, params);
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      signOut();
      render();
      return;
    }
    show(main, h('p', { class: 'error', role: 'alert' }, e.message));
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
