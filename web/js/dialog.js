// dialog.js -- a modal dialog for an action: its form, a preview step
// where the action has one, and the confirm button. Escape or Cancel
// closes it; focus returns to the button that opened it.

import { h } from './dom.js';
import { clearErrors, formAlert, showErrors } from './form.js';

/**
 * openDialog({title, body: [nodes], confirm: 'Upgrade', danger, preview,
 *             submit, ready})
 *   preview(): optional; resolves to nodes describing what would happen
 *              (shown before confirm is enabled), or rejects with an
 *              ApiError shown next to the fields.
 *   submit():  does the action; resolves when done (the dialog closes) or
 *              rejects with an ApiError shown next to the fields.
 *   ready():   optional; whether confirm may be pressed (re-checked on input).
 */
export function openDialog({ title, body, confirm, danger, preview, submit, ready }) {
  const opener = document.activeElement;
  const alert = formAlert();
  const previewBox = h('div', { class: 'preview', 'aria-live': 'polite' });
  const ok = h('button', { type: 'submit', class: danger ? 'danger' : '' }, confirm);
  const check = preview ? h('button', { type: 'button', class: 'plain' }, 'Preview') : null;
  const cancel = h('button', { type: 'button', class: 'plain' }, 'Cancel');
  // The body scrolls; the title and the buttons stay in view.
  const form = h('form', { method: 'dialog', 'aria-labelledby': 'dialog-title' },
    h('h2', { id: 'dialog-title' }, title),
    h('div', { class: 'dialog-body' }, body, previewBox, alert),
    h('div', { class: 'buttons' }, check, ok, cancel));
  const dlg = h('dialog', { class: 'panel' }, form);
  let previewed = !preview;
  const update = () => { ok.disabled = !previewed || (ready ? !ready() : false); };
  const invalidate = () => { if (preview) { previewed = false; previewBox.replaceChildren(); } update(); };
  form.addEventListener('input', invalidate);
  form.addEventListener('change', invalidate);
  const close = () => {
    dlg.close();
    dlg.remove();
    if (opener && opener.focus) opener.focus();
  };
  cancel.addEventListener('click', close);
  dlg.addEventListener('cancel', (ev) => { ev.preventDefault(); close(); });
  if (check) {
    check.addEventListener('click', async () => {
      clearErrors(form);
      previewBox.replaceChildren(h('p', { class: 'muted' }, 'Checking…'));
      try {
        previewBox.replaceChildren(...[].concat(await preview()));
        previewBox.scrollIntoView({ block: 'nearest' });
        previewed = true;
      } catch (e) {
        previewBox.replaceChildren();
        showErrors(form, e);
      }
      update();
    });
  }
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    ok.disabled = true;
    try {
      await submit();
      close();
    } catch (e) {
      showErrors(form, e);
      update();
    }
  });
  document.body.append(dlg);
  update();
  dlg.showModal();
  const first = form.querySelector('input, select, textarea, button');
  if (first) first.focus();
  return dlg;
}
