import { fileURLToPath } from 'node:url';
import { openInput } from '../../src/input/index.js';
import type { InputItem, InputOptions, InputReader } from '../../src/input/index.js';

/** Path of a fixture in test/fixtures/input. */
export function fixture(name: string): string {
  return fileURLToPath(new URL(`../fixtures/input/${name}`, import.meta.url));
}

/** Every item of a reader, bounded so a runaway reader fails the test instead of hanging it. */
export async function collect(reader: InputReader, limit = 1_000_000): Promise<InputItem[]> {
  const items: InputItem[] = [];
  for await (const item of reader) {
    items.push(item);
    if (items.length > limit) throw new Error(`more than ${limit} items`);
  }
  return items;
}

/** Opens `path` and reads all of it. */
export async function readAll(path: string, options?: InputOptions): Promise<{ columns: readonly string[] | null; items: InputItem[] }> {
  const reader = await openInput(path, options);
  const items = await collect(reader);
  return { columns: reader.columns, items };
}

/** The items as compact tuples, easier to compare: [rowNumber, line, record or message]. */
export function summarize(items: readonly InputItem[]): [number, number, unknown][] {
  return items.map((item) => [item.rowNumber, item.line, item.kind === 'record' ? item.record : item.message]);
}
