// bench-console.mjs -- the console's speed in Debian's chromium, each page
// loaded in a fresh browser context (nothing cached), signed in by the
// token put in sessionStorage before the page's scripts run:
//
//   list       the clusters list: first-contentful-paint, and until its
//              table lists the clusters
//   dashboard  a cluster's dashboard over a day: navigation start to the
//              dashboard's 'cairn:dashboard-drawn' mark (every chart drawn);
//              the first 12 charts of the default set as it opens, each the
//              Average across the nodes (dashboard12), the same one line per
//              node (dashboard12_nodes), then all of them per node (dashboard)
//
// and, per page, what came over the network (Resource Timing: encoded body
// sizes), the console's files apart from the API's answers.
//
//   node bench-console.mjs <base url> <token> <cluster id> <rounds>
//
// Prints one JSON document: {list: [...], dashboard12: [...], dashboard12_nodes: [...],
// dashboard: [...]},
// a round each.
// Run by tests/bench/console, which starts the stack and writes the data.

import { check, run } from './lib.mjs';

const [base, token, clusterId, rounds] = process.argv.slice(2);
// The first 12 charts of the dashboard's default set.
const TWELVE = ['EngineCPUUtilization', 'CPUUtilization', 'DatabaseMemoryUsagePercentage',
  'BytesUsedForCache', 'CurrConnections', 'NewConnections', 'CacheHits', 'CacheMisses',
  'CacheHitRate', 'Evictions', 'GetTypeCmds', 'SetTypeCmds'].join(',');

/* What the page fetched: [{url, bytes, api}], the document included. */
function transfers() {
  const nav = performance.getEntriesByType('navigation')[0];
  return [nav, ...performance.getEntriesByType('resource')].map((e) => ({
    url: new URL(e.name).pathname, bytes: e.encodedBodySize, api: new URL(e.name).pathname.startsWith('/v1/'),
    start_ms: e.startTime, wait_ms: e.responseStart - e.requestStart, end_ms: e.responseEnd,
  }));
}

async function fresh(browser, url, ready) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.addInitScript((t) => sessionStorage.setItem('cairn.token', t), token);
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  try {
    await page.goto(url);
    const result = await ready(page);
    check(errors.length === 0, `errors on the page: ${errors.join('; ')}`);
    return { ...result, transfers: await page.evaluate(transfers) };
  } finally {
    await context.close();
  }
}

/* Wait for the dashboard's mark; what it drew. Polled from here:
 * waitForFunction evaluates a string, which the CSP refuses. The mark holds
 * its own time; polling only finds it. */
async function drawn(page) {
  const deadline = Date.now() + 60000;
  while (!await page.evaluate(() => performance.getEntriesByName('cairn:dashboard-drawn').length)) {
    check(Date.now() < deadline, 'the dashboard did not draw within 60 s');
    await new Promise((r) => setTimeout(r, 20));
  }
  return page.evaluate(() => ({
    drawn_ms: performance.getEntriesByName('cairn:dashboard-drawn')[0].startTime,
    charts: [...document.querySelectorAll('figure.chart')].map((f) => ({
      name: f.getAttribute('aria-label'), series: Number(f.dataset.series), points: Number(f.dataset.points),
    })),
  }));
}

await run(async (_page, browser) => {
  const out = { list: [], dashboard12: [], dashboard12_nodes: [], dashboard: [] };
  for (let i = 0; i < Number(rounds); i++) {
    out.list.push(await fresh(browser, `${base}/#/clusters`, async (page) => {
      await page.getByRole('table', { name: 'Clusters' }).getByRole('link', { name: clusterId }).waitFor();
      return page.evaluate(() => ({
        fcp_ms: performance.getEntriesByName('first-contentful-paint')[0]?.startTime,
        listed_ms: performance.now(),
      }));
    }));
    for (const [key, query] of [['dashboard12', `&charts=${TWELVE}`],
      ['dashboard12_nodes', `&by=node&charts=${TWELVE}`], ['dashboard', '&by=node']]) {
      out[key].push(await fresh(browser, `${base}/#/clusters/${clusterId}/metrics?range=1d${query}`, drawn));
    }
  }
  console.log(JSON.stringify(out));
});
