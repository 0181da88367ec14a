/**
 * The HTML report in a real browser (Debian's `chromium`, headless), at 800 and 1280 px: every
 * chart draws marks and titles its axes, nothing is wider than the window, and the page loads
 * nothing but itself — even with lead data that tries to make it fetch a URL (a loopback server
 * counts any request that gets through).
 * Set QB_REPORT_ARTIFACTS=<dir> to keep the HTML, screenshots and the fixture ledger there.
 */
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { buildReport, readProblemRows, renderHtml } from '../../src/report/index.js';
import { buildMixedJob, type MixedJob } from '../fixtures/report/mixed-job.js';
import { buildHostileData } from '../fixtures/report/hostile-data.js';
import { createTempLedger, type TempLedger } from './_ledger.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) {
  console.warn(`html-report.test: ${CHROMIUM} not found, skipping the browser tests (apt-get install chromium)`);
}

describe.skipIf(!hasChromium)('HTML report in headless Chromium', () => {
  let browser: Browser;
  let probe: Server;
  let probeUrl: string;
  const probeHits: string[] = [];
  let t: TempLedger;
  let mixed: MixedJob;

  beforeAll(async () => {
    probe = createServer((req, res) => {
      probeHits.push(req.url ?? '');
      res.end('no');
    });
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    probeUrl = `http://127.0.0.1:${(probe.address() as AddressInfo).port}`;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync'],
    });
    t = createTempLedger();
    mixed = buildMixedJob(t.db);
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    t?.remove();
  });

  /** Opens `html` from a file and returns every URL the page requested, plus the page. */
  async function openReport(html: string, name: string, width = 1280) {
    const file = join(t.dir, `${name}.html`);
    writeFileSync(file, html);
    const page = await browser.newPage({ viewport: { width, height: 900 } });
    const requested: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
    return { page, requested, fileUrl: pathToFileURL(file).href, file };
  }

  for (const width of [800, 1280]) {
    it(`at ${width} px: draws every chart with titled axes, fits the window, loads nothing from the network`, async () => {
      const { jobId } = mixed;
      const report = await buildReport(t.sql, jobId);
      const html = renderHtml(report, await readProblemRows(t.sql, jobId));
      const { page, requested, fileUrl, file } = await openReport(html, `mixed-${width}`, width);
      try {
        expect(requested).toEqual([fileUrl]);
        const charts = await page.$$eval('svg[data-chart]', (svgs) => svgs.map((svg) => {
          const box = svg.getBoundingClientRect();
          const marks = [...svg.querySelectorAll('.mark')].filter((m) => {
            const b = (m as unknown as { getBBox(): { width: number; height: number } }).getBBox();
            return b.width > 0 || b.height > 0;
          });
          const titles = Object.fromEntries([...svg.querySelectorAll('.axis-title')]
            .map((title) => [title.getAttribute('data-axis'), (title.textContent ?? '').trim()]));
          return { chart: svg.getAttribute('data-chart'), width: box.width, height: box.height, marks: marks.length, titles };
        }));
        expect(charts.map((c) => c.chart)).toEqual([
          'outcomes', 'completions', 'concurrency', 'throughput', 'latency-agent_validate', 'latency-quote', 'premium',
        ]);
        for (const c of charts) {
          expect(c.marks, `${c.chart} marks`).toBeGreaterThan(0);
          expect(c.width, `${c.chart} width`).toBeGreaterThan(300);
          expect(c.height, `${c.chart} height`).toBeGreaterThan(100);
          expect(c.titles.x, `${c.chart} x axis title`).toMatch(/\w/);
          expect(c.titles.y, `${c.chart} y axis title`).toMatch(/\w/);
        }
        // Series with another unit have their own scale: the cumulative rows and the 429 share.
        expect(charts.filter((c) => c.titles.y2 !== undefined).map((c) => c.chart)).toEqual(['completions', 'throughput']);
        // 8 non-empty states → 8 bars; the limit and in-flight lines; the gap between the two runs marked.
        expect(charts[0]?.marks).toBe(8);
        expect(await page.locator('svg[data-chart="completions"] path.cumulative').count()).toBe(1);
        expect(await page.locator('svg[data-chart="concurrency"] path.limit').count()).toBe(1);
        expect(await page.locator('svg[data-chart="concurrency"] .gap-label').allTextContents()).toEqual([expect.stringMatching(/^pause \d+s$/)]);
        // Count axes have whole ticks only.
        const countTicks = await page.$$eval('svg[data-chart="outcomes"] text.x-tick, svg[data-chart^="latency"] text.y-tick, svg[data-chart="completions"] text.y-tick',
          (texts) => texts.map((text) => text.textContent ?? ''));
        expect(countTicks.length).toBeGreaterThan(5);
        for (const tick of countTicks) expect(tick).toMatch(/^[\d,]+k?$/);

        // Every row that did not succeed is listed, and the tables fit the window.
        expect(await page.locator('table.problem-rows tbody tr').count()).toBe(report.rows.total - report.rows.by_state.succeeded);
        expect(await page.locator('table.error-groups tbody tr').count()).toBe(report.row_error_groups);
        const limit = (await page.evaluate('document.documentElement.clientWidth')) as number;
        expect(limit).toBeLessThanOrEqual(width);
        for (const table of ['table.problem-rows', 'table.error-groups']) {
          const box = await page.locator(table).boundingBox();
          expect(box?.width, table).toBeGreaterThan(limit / 2);
          expect((box?.x ?? 0) + (box?.width ?? Infinity), table).toBeLessThanOrEqual(limit);
        }
        const overflow = await page.$$eval('body *', (els, max) => els
          .filter((el) => el.getBoundingClientRect().right > max + 0.5)
          .map((el) => `${el.tagName.toLowerCase()}.${el.getAttribute('class') ?? ''} right=${Math.round(el.getBoundingClientRect().right)}`)
          .slice(0, 5), limit);
        expect(overflow).toEqual([]);
        expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(limit);

        const artifacts = process.env.QB_REPORT_ARTIFACTS;
        if (artifacts !== undefined && artifacts !== '') {
          mkdirSync(artifacts, { recursive: true });
          copyFileSync(file, join(artifacts, 'report.html'));
          await page.screenshot({ path: join(artifacts, `report-${width}.png`), fullPage: true });
          t.db.pragma('wal_checkpoint(TRUNCATE)');
          copyFileSync(t.path, join(artifacts, 'mixed-job.db'));
        }
      } finally {
        await page.close();
      }
    });
  }

  it('draws the pace of a run that was paced as a dashed line on the throughput chart, with its key', async () => {
    const paced = createTempLedger();
    try {
      const { jobId } = buildMixedJob(paced.db);
      const run = (await buildReport(paced.sql, jobId)).partner.settled_run_id;
      // A rate cap of about 20 requests/s found from the run's tenth second on.
      paced.db.prepare('UPDATE run_samples SET pace_rate = 19 + (elapsed_ms / 1000) % 3 WHERE run_id = ? AND elapsed_ms >= 10000').run(run);
      const html = renderHtml(await buildReport(paced.sql, jobId), await readProblemRows(paced.sql, jobId));
      const { page } = await openReport(html, 'paced', 800);
      try {
        const chart = page.locator('svg[data-chart="throughput"]');
        // Runs in the page (the test's TypeScript has no DOM types).
        const line = await chart.locator('path.pace').evaluate((path) => {
          const box = (path as unknown as { getBBox(): { width: number } }).getBBox();
          const style = (globalThis as unknown as { getComputedStyle(element: unknown): { strokeDasharray: string } }).getComputedStyle(path);
          return { width: box.width, dash: style.strokeDasharray };
        });
        // From the run's tenth second to its end: most of the chart's width, dashed.
        expect(line.width).toBeGreaterThan(100);
        expect(line.dash).not.toBe('none');
        expect(await chart.locator('.axis-title[data-axis="y"]').textContent()).toBe('rows / s · pace, requests / s');
        expect(await page.locator('figure', { has: chart }).locator('figcaption .key').allTextContents())
          .toEqual(['rows / s (left)', 'pace, requests / s (left)', '429s, % of answers (right)']);
        const artifacts = process.env.QB_REPORT_ARTIFACTS;
        if (artifacts !== undefined && artifacts !== '') {
          mkdirSync(artifacts, { recursive: true });
          await chart.screenshot({ path: join(artifacts, 'throughput-paced.png') });
        }
      } finally {
        await page.close();
      }
    } finally {
      paced.remove();
    }
  });

  it('caps the row table with a note that says how to get every row', async () => {
    const { jobId } = mixed;
    const html = renderHtml(await buildReport(t.sql, jobId), await readProblemRows(t.sql, jobId, 10), '/var/lib/qb/night ledger.db');
    const { page } = await openReport(html, 'capped', 800);
    try {
      expect(await page.locator('table.problem-rows tbody tr').count()).toBe(10);
      const note = await page.locator('table.problem-rows').evaluate((table) => table.previousElementSibling?.textContent ?? '');
      // The commands name the ledger (quoted for the shell) and the job: they work as printed.
      expect(note).toMatch(/^The first 10 of 10\d, in row order\. All of them: quote-batch export --ledger '\/var\/lib\/qb\/night ledger\.db' --job \d+ --status pending,rejected,agent_invalid,invalid,duplicate,failed,in_doubt --out rows\.csv/);
      expect(await page.locator('p.note', { hasText: 'hand the rows back' }).textContent())
        .toContain(`quote-batch export --ledger '/var/lib/qb/night ledger.db' --job ${jobId} --status rejected,invalid,agent_invalid --format source --out to-fix.csv`);
    } finally {
      await page.close();
    }
  });

  it('escapes hostile lead data: no element, no script, no request comes from it', async () => {
    const { jobId, messages } = buildHostileData(t.db, probeUrl);
    const html = renderHtml(await buildReport(t.sql, jobId), await readProblemRows(t.sql, jobId));
    expect(html).not.toContain('<script');
    expect(html).not.toContain('<img');
    expect(html).not.toContain('<iframe');
    const { page, requested, fileUrl } = await openReport(html, 'hostile');
    try {
      expect(requested).toEqual([fileUrl]);
      expect(probeHits).toEqual([]);
      const counts: Record<string, number> = {};
      for (const tag of ['script', 'img', 'iframe', 'link', 'style']) counts[tag] = await page.locator(tag).count();
      expect(counts).toEqual({ script: 0, img: 0, iframe: 0, link: 0, style: 1 });
      // The text is shown as text.
      const text = await page.locator('table.problem-rows').innerText();
      expect(text).toContain(`<img src="${probeUrl}/img.png">`);
      expect(text).toContain(messages[1]);
      expect(await page.locator('svg[data-chart="outcomes"] .mark').count()).toBe(5);
      // A ledger without per-second samples says so where the partner's charts would be.
      expect(await page.locator('svg[data-chart="concurrency"] text.empty').textContent()).toMatch(/no samples/);
    } finally {
      await page.close();
    }
  });
});
