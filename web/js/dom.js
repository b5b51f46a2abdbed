// dom.js -- building elements without HTML strings: everything the API
// says goes into text nodes, never into markup.

/** h('a', {href: '#/x', class: 'y'}, 'text', child, ...) */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else if (value === true) el.setAttribute(name, '');
    else el.setAttribute(name, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** A line that says what went wrong (screen readers announce it). */
export function alertLine(text) {
  return h('p', { class: 'error', role: 'alert' }, text);
}

/** A labelled table that scrolls sideways on a narrow screen. heads are
 *  texts or [text, class]; rows are <tr>s or a <tbody>; empty is what an
 *  empty table says. */
export function table(label, heads, rows, empty = 'None.') {
  const body = rows instanceof Node && rows.tagName === 'TBODY' ? rows
    : h('tbody', {}, rows.length ? rows
      : h('tr', {}, h('td', { colspan: heads.length, class: 'muted' }, empty)));
  return h('div', { class: 'scroll' }, h('table', { 'aria-label': label },
    h('thead', {}, h('tr', {}, heads.map((x) => {
      const [text, cls] = [].concat(x);
      return h('th', { class: cls }, text);
    }))),
    body));
}

/** Replace the contents of el. */
export function show(el, ...children) {
  el.replaceChildren(...children.flat(Infinity).filter((c) => c !== undefined && c !== null));
}
