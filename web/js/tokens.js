// tokens.js -- API tokens, for admin tokens: create one (its secret is
// shown this once, and it may expire), list them, revoke one.

import { api, getAll } from './api.js';
import { h, show, table } from './dom.js';
import { copyButton } from './format.js';
import { openDialog } from './dialog.js';
import { checkbox, field, formAlert, input, select, showErrors } from './form.js';

function revoke(t, done) {
  openDialog({
    title: `Revoke ${t.name}`,
    body: h('p', {}, `Token ${t.id} stops working at once. This cannot be undone.`),
    confirm: 'Revoke',
    danger: true,
    submit: async () => { await api('DELETE', `/v1/tokens/${encodeURIComponent(t.id)}`); done(); },
  });
}

function row(t, done) {
  return h('tr', { class: t.revoked_at ? 'revoked' : '' },
    h('td', {}, t.name), h('td', { class: 'mono' }, t.id), h('td', {}, t.scope),
    h('td', { class: 'optional' }, t.host_details ? 'yes' : 'no'),
    h('td', { class: 'optional mono' }, t.created_at),
    h('td', { class: 'optional mono' }, t.last_used_at || 'never'),
    h('td', { class: 'optional mono' }, t.expires_at || 'never'),
    h('td', {}, t.revoked_at ? h('span', { class: 'muted' }, `revoked ${t.revoked_at}`)
      : h('button', { type: 'button', class: 'plain', 'aria-label': `Revoke ${t.name}`, onclick: () => revoke(t, done) }, 'Revoke')));
}

export async function renderTokens(main) {
  const reload = () => renderTokens(main);
  const tokens = await getAll('/v1/tokens', 'tokens');
  const name = field('name', 'Name', input({ required: true, maxlength: 64, placeholder: 'ci-deploy' }));
  const scope = field('scope', 'Scope', select([['read', 'read: GET only'], ['admin', 'admin: everything']], 'read'));
  // Which hosts run the nodes is the operator's business: a read token
  // sees it only when asked; an admin token always does.
  const hosts = field('host_details', 'Host details', checkbox(false),
    'Read tokens: see which hosts run the nodes, and the hosts\' events.');
  const syncHosts = () => {
    const admin = scope.control.value === 'admin';
    hosts.control.disabled = admin;
    if (admin) hosts.control.checked = true;
  };
  scope.control.addEventListener('change', syncHosts);
  const expires = field('expires_in_days', 'Expires',
    select([['', 'never'], ['30', 'in 30 days'], ['90', 'in 90 days'], ['365', 'in a year']], '90'));
  const secret = h('div', { 'aria-live': 'polite' });
  const form = h('form', { class: 'panel filters', 'aria-label': 'Create a token' },
    name.el, scope.el, hosts.el, expires.el, h('button', { type: 'submit' }, 'Create token'), formAlert());
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const body = { name: name.control.value.trim(), scope: scope.control.value };
      if (body.scope === 'read') body.host_details = hosts.control.checked;
      if (expires.control.value) body.expires_in_days = Number(expires.control.value);
      const t = await api('POST', '/v1/tokens', body);
      await reload();
      // The secret exists in this reply only: show it once, never keep it.
      const box = main.querySelector('#token-secret');
      show(box, h('div', { class: 'panel secret', role: 'status' },
        h('p', {}, `Token ${t.name} (${t.scope}) created. Copy its secret now: it is shown this once.`),
        h('code', { class: 'mono' }, t.token), ' ',
        copyButton(t.token, 'the secret')));
    } catch (e) {
      showErrors(form, e);
    }
  });
  show(main, h('h1', {}, 'API tokens'), form, h('div', { id: 'token-secret' }, secret),
    table('Tokens', ['Name', 'ID', 'Scope', ['Host details', 'optional'], ['Created', 'optional'], ['Last used', 'optional'],
      ['Expires', 'optional'], ''],
      tokens.map((t) => row(t, reload))));
}
