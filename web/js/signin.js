// signin.js -- the sign-in page: an API token, checked against the API
// before it is kept (in sessionStorage only).

import { api, signIn, signOut, ApiError } from './api.js';
import { h, show } from './dom.js';

export function renderSignIn(main, onDone) {
  const input = h('input', { id: 'token', name: 'token', type: 'password', autocomplete: 'off',
                             required: true, spellcheck: 'false' });
  const error = h('p', { class: 'error', role: 'alert' });
  const form = h('form', { class: 'panel signin', 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title' }, 'Sign in to Cairn'),
    h('label', { for: 'token' }, 'API token'),
    input,
    h('p', { class: 'muted' }, 'Create one with `cairnd token create`. It is kept in this tab only.'),
    error,
    h('button', { type: 'submit' }, 'Sign in'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    signIn(input.value.trim());
    try {
      await api('GET', '/v1/clusters?page_size=1');
      onDone();
    } catch (e) {
      signOut();
      error.textContent = e instanceof ApiError && e.status === 401
        ? 'That token is not valid: it is malformed, unknown or revoked.'
        : `Could not sign in: ${e.message}`;
    }
  });
  show(main, form);
  input.focus();
}
