#!/usr/bin/env node
// Renders the HTML report of a ledger in headless Chromium and saves screenshots, so the report
// can be looked at (and checked offline: any network request the page makes is an error).
//
//   npm run build && node bench/report-screenshot.js [--ledger ./quote-batch.db] [--job <id>]
//        [--out bench/results/report.png] [--width 800,1280] [--height 900]
//
// For each width, writes <out>-<width>.png (the whole page) and <out>-<width>-top.png (the first
// screen), and <out>.html beside them; prints what overflows the window sideways, if anything.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    ledger: { type: 'string', default: 'quote-batch.db' },
    job: { type: 'string' },
    out: { type: 'string', default: resolve(root, 'bench/results/report.png') },
    width: { type: 'string', default: '800,1280' },
    height: { type: 'string', default: '900' },
    chromium: { type: 'string', default: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium' },
  },
});

if (!existsSync(resolve(root, 'dist/report/index.js'))) {
  console.error('dist/ is missing: run `npm run build` first');
  process.exit(2);
}
if (!existsSync(values.chromium)) {
  console.error(`${values.chromium} not found: apt-get install chromium (or set CHROMIUM_PATH)`);
  process.exit(2);
}
const { buildReport, openReportLedger, readProblemRows, renderHtml, resolveJobId } = await import(
  pathToFileURL(resolve(root, 'dist/report/index.js')).href
);
const { ledgerSql } = await import(pathToFileURL(resolve(root, 'dist/ledger/index.js')).href);

const ledgerPath = resolve(values.ledger);
const ledger = openReportLedger(ledgerPath);
let html;
let jobId;
try {
  const db = ledgerSql(ledger);
  jobId = await resolveJobId(db, values.job === undefined ? undefined : Number(values.job), ledgerPath);
  html = renderHtml(await buildReport(db, jobId), await readProblemRows(db, jobId));
} finally {
  ledger.close();
}

const out = resolve(values.out);
mkdirSync(dirname(out), { recursive: true });
const htmlPath = out.replace(/\.png$/, '') + '.html';
writeFileSync(htmlPath, html);

const browser = await chromium.launch({
  executablePath: values.chromium,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
try {
  const fileUrl = pathToFileURL(htmlPath).href;
  const requests = [];
  console.log(`job ${jobId} of ${ledgerPath}`);
  for (const width of values.width.split(',').map(Number)) {
    const page = await browser.newPage({ viewport: { width, height: Number(values.height) } });
    page.on('request', (request) => requests.push(request.url()));
    await page.goto(fileUrl, { waitUntil: 'load' });
    const charts = await page.$$eval('svg[data-chart]', (svgs) =>
      svgs.map((svg) => `${svg.getAttribute('data-chart')}: ${svg.querySelectorAll('.mark').length} marks`));
    const max = await page.evaluate('document.documentElement.clientWidth');
    const overflow = await page.$$eval('body *', (els, limit) => els
      .filter((el) => el.getBoundingClientRect().right > limit + 0.5)
      .map((el) => `${el.tagName.toLowerCase()}.${el.getAttribute('class') ?? ''}`).slice(0, 5), max);
    const base = `${out.replace(/\.png$/, '')}-${width}`;
    await page.screenshot({ path: `${base}.png`, fullPage: true });
    await page.screenshot({ path: `${base}-top.png` });
    console.log(`${width} px: charts ${charts.join(', ')}; overflowing: ${overflow.length === 0 ? 'nothing' : overflow.join(', ')}`);
    console.log(`  wrote ${base}.png and ${base}-top.png`);
    await page.close();
  }
  const foreign = requests.filter((url) => url !== fileUrl);
  console.log(`network requests besides the page: ${foreign.length}; html: ${htmlPath}`);
  if (foreign.length > 0) {
    console.error(`the report requested: ${foreign.join(', ')}`);
    process.exitCode = 1;
  }
} finally {
  await browser.close();
}
