/**
 * The HTML report in a real browser (Debian's `chromium`, headless): every chart draws marks, and
 * the page loads nothing but itself — even with lead data that tries to make it fetch a URL (a
 * loopback server counts any request that gets through).
 * Set QB_REPORT_ARTIFACTS=<dir> to keep the HTML, a screenshot and the fixture ledger there.
 */
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { buildReport, readProblemRows, renderHtml } from '../../src/report/index.js';
import { buildMixedJob } from '../fixtures/report/mixed-job.js';
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
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    t?.remove();
  });

  /** Opens `html` from a file and returns every URL the page requested, plus the page. */
  async function openReport(html: string, name: string) {
    const file = join(t.dir, `${name}.html`);
    writeFileSync(file, html);
    const page = await browser.newPage({ viewport: { width: 1366, height: 900 } });
    const requested: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
    return { page, requested, fileUrl: pathToFileURL(file).href, file };
  }

  it('draws every chart of a realistic job and loads nothing from the network', async () => {
    const { jobId } = buildMixedJob(t.db);
    const html = renderHtml(buildReport(t.db, jobId), readProblemRows(t.db, jobId));
    const { page, requested, fileUrl, file } = await openReport(html, 'mixed');
    try {
      expect(requested).toEqual([fileUrl]);
      const charts = await page.$$eval('svg[data-chart]', (svgs) => svgs.map((svg) => {
        const box = svg.getBoundingClientRect();
        const marks = [...svg.querySelectorAll('.mark')].filter((m) => {
          const b = (m as unknown as { getBBox(): { width: number; height: number } }).getBBox();
          return b.width > 0 || b.height > 0;
        });
        return { chart: svg.getAttribute('data-chart'), width: box.width, height: box.height, marks: marks.length };
      }));
      expect(charts.map((c) => c.chart)).toEqual(['outcomes', 'completions', 'latency-agent_validate', 'latency-quote', 'premium']);
      for (const c of charts) {
        expect(c.marks, `${c.chart} marks`).toBeGreaterThan(0);
        expect(c.width, `${c.chart} width`).toBeGreaterThan(300);
        expect(c.height, `${c.chart} height`).toBeGreaterThan(100);
      }
      // 8 non-empty states → 8 bars; the timeline has bars and the cumulative line.
      expect(charts[0]?.marks).toBe(8);
      expect(await page.locator('svg[data-chart="completions"] path.cumulative').count()).toBe(1);
      const problemRows = await page.locator('div.scroll tbody tr').count();
      expect(problemRows).toBeGreaterThan(0);
      // Laptop screen: nothing overflows sideways.
      const limit = (await page.evaluate('document.documentElement.clientWidth')) as number;
      const overflow = await page.$$eval('body *', (els, max) => els
        .filter((el) => el.getBoundingClientRect().right > max + 0.5)
        .map((el) => `${el.tagName.toLowerCase()}.${el.className} right=${Math.round(el.getBoundingClientRect().right)}`)
        .slice(0, 5), limit);
      expect(overflow).toEqual([]);

      const artifacts = process.env.QB_REPORT_ARTIFACTS;
      if (artifacts !== undefined && artifacts !== '') {
        mkdirSync(artifacts, { recursive: true });
        copyFileSync(file, join(artifacts, 'report.html'));
        await page.screenshot({ path: join(artifacts, 'report.png'), fullPage: true });
        t.db.pragma('wal_checkpoint(TRUNCATE)');
        copyFileSync(t.path, join(artifacts, 'mixed-job.db'));
      }
    } finally {
      await page.close();
    }
  });

  it('escapes hostile lead data: no element, no script, no request comes from it', async () => {
    const { jobId, messages } = buildHostileData(t.db, probeUrl);
    const html = renderHtml(buildReport(t.db, jobId), readProblemRows(t.db, jobId));
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
      const text = await page.locator('div.scroll').innerText();
      expect(text).toContain(`<img src="${probeUrl}/img.png">`);
      expect(text).toContain(messages[1]);
      expect(await page.locator('svg[data-chart="outcomes"] .mark').count()).toBe(5);
    } finally {
      await page.close();
    }
  });
});
