// form.js -- form fields with their label and a place for the API's
// complaint about them: a problem document's errors [{field, message}] are
// shown next to the control whose name the field starts with
// ("parameters.maxmemory-policy" goes to "parameters").

import { ApiError } from './api.js';
import { h } from './dom.js';

let ids = 0;

/** A labelled field: {el, control, error}. hint (optional) is shown
 *  under the control and named as its description. */
export function field(name, label, control, hint) {
  const id = control.id || `f-${name}-${++ids}`;
  control.id = id;
  control.name = name;
  const error = h('div', { class: 'field-error', id: `${id}-error`, 'aria-live': 'polite' });
  const help = hint ? h('div', { class: 'muted hint', id: `${id}-hint` }, hint) : null;
  control.setAttribute('aria-describedby', [help && help.id, error.id].filter(Boolean).join(' '));
  const el = h('div', { class: 'field', 'data-field': name }, h('label', { for: id }, label), control,
    help, error);
  return { el, control, error };
}

export function input(attrs = {}) {
  return h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', ...attrs });
}

export function select(options, value) {
  return h('select', {}, options.map(([v, text]) =>
    h('option', { value: v, selected: String(v) === String(value) }, text)));
}

export function checkbox(checked) {
  return h('input', { type: 'checkbox', checked: !!checked });
}

/** A whole number as typed, or the text itself so that the API names the
 *  field it refuses. */
export function number(control) {
  const v = control.value.trim();
  return v !== '' && Number.isInteger(Number(v)) ? Number(v) : v;
}

/** "key=value" lines as an object; a line without "=" is kept as a key
 *  with the value "" so that the API names it. */
export function parsePairs(text) {
  const out = {};
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (!t) continue;
    const i = t.indexOf('=');
    out[i < 0 ? t : t.slice(0, i).trim()] = i < 0 ? '' : t.slice(i + 1).trim();
  }
  return out;
}

export function formatPairs(obj) {
  return Object.entries(obj || {}).map(([k, v]) => `${k}=${v}`).join('\n');
}

/** Clear every field's error and the form's alert. */
export function clearErrors(form) {
  for (const e of form.querySelectorAll('.field-error')) e.textContent = '';
  for (const c of form.querySelectorAll('[aria-invalid]')) c.removeAttribute('aria-invalid');
  const alert = form.querySelector('.form-alert');
  if (alert) alert.textContent = '';
}

/** Show an API refusal: each failing field's message next to its control
 *  (the first one focused), the rest in the form's alert. */
export function showErrors(form, err) {
  clearErrors(form);
  const alert = form.querySelector('.form-alert');
  const loose = [];
  let first = null;
  for (const { field: name, message } of (err instanceof ApiError ? err.errors : [])) {
    const top = String(name).split('.')[0].split('[')[0];
    const box = form.querySelector(`[data-field="${CSS.escape(top)}"]`);
    if (!box) {
      loose.push(`${name}: ${message}`);
      continue;
    }
    const slot = box.querySelector('.field-error');
    slot.textContent = slot.textContent ? `${slot.textContent}; ${name}: ${message}`
      : (name === top ? message : `${name}: ${message}`);
    const control = box.querySelector('input, select, textarea');
    control.setAttribute('aria-invalid', 'true');
    first = first || control;
  }
  if (alert) alert.textContent = [err.message, ...loose].join(' — ');
  if (first) first.focus();
  else if (alert) alert.scrollIntoView({ block: 'nearest' });
}

/** The form's alert line (role=alert), placed where the form wants it. */
export function formAlert() {
  return h('p', { class: 'error form-alert', role: 'alert' });
}
