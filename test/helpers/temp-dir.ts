import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';

export interface TempDir {
  readonly dir: string;
  path(name: string): string;
  cleanup(): void;
}

/** A fresh temp directory; `cleanup()` removes it. */
export function makeTempDir(prefix = 'quote-batch-'): TempDir {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return {
    dir,
    path: (name) => join(dir, name),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * A temp directory made before each test (`per: 'test'`, the default) or once for the enclosing
 * describe block (`per: 'file'`), and removed after it. Call at the top of a describe block; read
 * `dir` and `path()` inside hooks and tests.
 */
export function useTempDir(prefix?: string, { per = 'test' }: { per?: 'test' | 'file' } = {}): Omit<TempDir, 'cleanup'> {
  let current: TempDir | undefined;
  const [setUp, tearDown] = per === 'test' ? [beforeEach, afterEach] : [beforeAll, afterAll];
  setUp(() => {
    current = makeTempDir(prefix);
  });
  tearDown(() => {
    current?.cleanup();
    current = undefined;
  });
  const get = (): TempDir => {
    if (current === undefined) throw new Error('useTempDir: the directory exists only inside hooks and tests');
    return current;
  };
  return {
    get dir() {
      return get().dir;
    },
    path: (name) => get().path(name),
  };
}
