// Opens a report.html in Debian's chromium, headless, with a fresh profile, and reports what
// happened as one JSON document on stdout (the C++ test asserts on it):
//   console   every console message and uncaught page error
//   requests  every request the page's context made, seen through the DevTools protocol
//   netlog    URL requests in chromium's own net log that a document initiated (the browser's
//             background requests -- update checks, account probes -- have no document origin
//             and are listed apart, in netlog_background)
//   charts    per chart container: rendered state and the number of drawn SVG elements of each
//             named mark ("<name>_marks" groups, see reports/charts.h)
//   links     the absolute URL of every <a href> on the page (the test checks they resolve)
//   headings  every h1-h4 in document order: level and text as rendered
//   tables    every <table> in document order: the heading it sits under, its header cells, and
//             its body rows as cell texts
//   screenshot  the PNG written
// Usage: node browser_check.js REPORT.html OUTPUT_DIR [SCREENSHOT_NAME]
// Exit: 0 when the page loaded (whatever it did: the test judges), 2 usage, 3 no browser or no
// driver, 4 the page never finished rendering.
'use strict';
const fs = require('fs');
const path = require('path');

// A net log closed by a clean shutdown is complete JSON; one cut short lacks its closing "]}".
function readNetLog(file) {
  const text = fs.readFileSync(file, 'utf8').trim();
  try {
    return JSON.parse(text);
  } catch (e) {
    return JSON.parse(text.replace(/,$/, '') + ']}');
  }
}

async function main() {
  const [html, outDir, shotName = 'report.png'] = process.argv.slice(2);
  if (!html || !outDir) {
    console.error('usage: node browser_check.js REPORT.html OUTPUT_DIR [SCREENSHOT_NAME]');
    return 2;
  }
  const executable = process.env.K3_CHROMIUM || '/usr/bin/chromium';
  if (!fs.existsSync(executable)) {
    console.error(`browser_check: ${executable}: no such browser (scripts/setup.sh installs Debian's chromium)`);
    return 3;
  }
  let chromium;
  try {
    ({ chromium } = require('playwright-core'));
  } catch (e) {
    console.error(`browser_check: playwright-core not found (scripts/setup.sh vendors it into build/third_party/js): ${e.message}`);
    return 3;
  }
  fs.mkdirSync(outDir, { recursive: true });
  const profile = fs.mkdtempSync(path.join(outDir, 'chromium-profile-'));
  const netlogPath = path.join(outDir, `${path.basename(shotName, '.png')}-netlog.json`);
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: executable,
    headless: true,
    viewport: { width: 1400, height: 1000 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync', `--log-net-log=${netlogPath}`],
  });
  const result = { console: [], requests: [], netlog: [], netlog_background: 0, charts: [], links: [], headings: [],
                   tables: [], screenshot: '' };
  context.on('request', (r) => result.requests.push(r.url()));
  const page = context.pages()[0] || (await context.newPage());
  page.on('console', (m) => result.console.push({ type: m.type(), text: m.text() }));
  page.on('pageerror', (e) => result.console.push({ type: 'pageerror', text: String(e) }));
  const url = 'file://' + path.resolve(html);
  let finished = true;
  try {
    await page.goto(url, { waitUntil: 'load', timeout: 60000 });
    await page.waitForFunction(() => document.body && document.body.dataset.charts !== undefined, null,
                               { timeout: 60000 });
  } catch (e) {
    finished = false;
    result.console.push({ type: 'harness', text: `did not finish rendering: ${e.message}` });
  }
  result.body_charts = await page.evaluate(() => document.body ? document.body.dataset.charts || null : null);
  result.charts = await page.evaluate(() => Array.from(document.querySelectorAll('div.chart')).map((el) => {
    const marks = {};
    for (const g of el.querySelectorAll('svg g[class*="_marks"]')) {
      const name = Array.from(g.classList).find((c) => c.endsWith('_marks'));
      marks[name] = (marks[name] || 0) + g.children.length;
    }
    return { id: el.id, section: el.dataset.chart, rendered: el.dataset.rendered || null,
             svg: el.querySelectorAll('svg').length, marks };
  }));
  result.links = await page.evaluate(() => Array.from(document.querySelectorAll('a[href]')).map((a) => a.href));
  result.headings = await page.evaluate(() => Array.from(document.querySelectorAll('h1, h2, h3, h4')).map(
    (h) => ({ level: Number(h.tagName[1]), text: h.innerText.trim() })));
  result.tables = await page.evaluate(() => Array.from(document.querySelectorAll('table')).map((t) => {
    let under = '';
    for (const h of document.querySelectorAll('h1, h2, h3, h4')) {
      if (h.compareDocumentPosition(t) & Node.DOCUMENT_POSITION_FOLLOWING) under = h.innerText.trim();
    }
    const cells = (row) => Array.from(row.cells).map((c) => c.innerText.trim());
    return { under, header: t.tHead ? cells(t.tHead.rows[0]) : [],
             rows: Array.from(t.tBodies).flatMap((b) => Array.from(b.rows).map(cells)) };
  }));
  result.screenshot = path.join(outDir, shotName);
  await page.screenshot({ path: result.screenshot, fullPage: true });
  await context.close();  // flushes the net log

  const log = readNetLog(netlogPath);
  const names = Object.fromEntries(Object.entries(log.constants.logEventTypes).map(([k, v]) => [v, k]));
  for (const e of log.events) {
    if (names[e.type] !== 'URL_REQUEST_START_JOB' || !e.params || !e.params.url) continue;
    const fromDocument = (e.params.initiator && e.params.initiator !== 'not an origin') ||
                         String(e.params.network_isolation_key || '').includes('file://');
    if (fromDocument) result.netlog.push(e.params.url);
    else result.netlog_background++;
  }
  fs.rmSync(profile, { recursive: true, force: true });
  // A pipe takes a large result in several writes: exit only once it has all of it (process.exit
  // right after write() cuts a long document short).
  await new Promise((resolve) => process.stdout.write(JSON.stringify(result, null, 1) + '\n', resolve));
  return finished ? 0 : 4;
}

main().then((code) => process.exit(code), (e) => { console.error(`browser_check: ${e.stack || e}`); process.exit(1); });
