import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { buildProbe } from '../../src/mapping/_fast-validate.js';
import { loadMapping } from '../../src/mapping/index.js';
import { QuoteRequest } from '../../src/partner/schemas.js';

const ROOT = join(import.meta.dirname, '..', '..');

/** Replaces one leaf (the k-th, depth-first) by `value`; returns false when there is no k-th leaf. */
function replaceLeaf(node: unknown, k: { left: number }, value: unknown): boolean {
  if (node === null || typeof node !== 'object') return false;
  for (const key of Object.keys(node)) {
    const child = (node as Record<string, unknown>)[key];
    if (child !== null && typeof child === 'object') {
      if (replaceLeaf(child, k, value)) return true;
    } else if (k.left-- === 0) {
      (node as Record<string, unknown>)[key] = value;
      return true;
    }
  }
  return false;
}

describe('the quick request validator', () => {
  it('agrees with zod on every sample row and on every one-leaf corruption of them', async () => {
    const mapping = await loadMapping(join(ROOT, 'mappings', 'example-csv.yaml'));
    const records = parse(readFileSync(join(ROOT, 'samples', 'leads.csv')), { columns: true, relax_column_count: true }) as Record<string, string>[];
    const probe = buildProbe(QuoteRequest);
    let compared = 0;
    for (const [i, record] of records.slice(0, 40).entries()) {
      const request = mapping.mapRow(record, i + 1).request;
      expect(probe(request)).toBe(QuoteRequest.safeParse(request).success);
      for (const bad of ['', 'x', -1, 1.5, true, null, [], {}]) {
        for (let leaf = 0; leaf < 200; leaf += 1) {
          const copy = structuredClone(request);
          if (!replaceLeaf(copy, { left: leaf }, bad)) break;
          expect(probe(copy), JSON.stringify(copy)).toBe(QuoteRequest.safeParse(copy).success);
          compared += 1;
        }
      }
    }
    expect(compared).toBeGreaterThan(1000);
  });
});
