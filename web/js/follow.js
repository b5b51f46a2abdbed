// follow.js -- a page that follows what is under way: loaded again and
// again while it says so, never while a dialog is open, and no more once
// the address has changed or the page has been opened anew.

import { alertLine, show } from './dom.js';

/** How soon to look again while a dialog is open. */
const DIALOG_WAIT_MS = 2000;

let generation = 0;

/**
 * follow(box, load): load(refresh) draws the page and resolves to the
 * milliseconds before it should be drawn again, or null once all is
 * settled; refresh() draws it again as soon as the running task is over
 * (what an action calls when it is done: its dialog closes first). The
 * first load's error is the caller's; a later one is shown in box, and
 * the following stops.
 */
export async function follow(box, load) {
  const here = location.hash;
  const mine = ++generation;
  let timer = null;
  let loading = false;
  let asked = false;  // a refresh asked for while a load ran
  const again = (ms) => {
    clearTimeout(timer);
    timer = typeof ms === 'number' ? setTimeout(look, ms) : null;
  };
  const refresh = () => {
    if (loading) asked = true;
    else again(0);
  };
  const draw = async () => {
    loading = true;
    asked = false;
    try {
      return await load(refresh);
    } finally {
      loading = false;
    }
  };
  const look = async () => {
    if (location.hash !== here || mine !== generation) return;
    if (document.querySelector('dialog[open]')) {
      again(DIALOG_WAIT_MS);
      return;
    }
    const ms = await draw().catch((e) => {
      show(box, alertLine(e.message));
      return null;
    });
    again(asked ? 0 : ms);
  };
  const ms = await draw();
  again(asked ? 0 : ms);
}
