/**
 * `--json-log` on every command (README, "Commands"): each declares it, and then every line it writes
 * on standard error is one JSON object of the same shape as `run`'s (pino: `level`, `time`, `msg`,
 * `name`, fields), its errors with `code`, `hint` and `exit_code`, signal notices included. One test
 * per command that has no such test of its own elsewhere (run, check, jobs, report, export, resolve,
 * prune: test/cli/errors.test.ts, json-log-halts.test.ts, resolve-prune.test.ts; agents:
 * test/commands/agents.test.ts).
 */
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runCli, startCli, type CliResult } from '../helpers/cli.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { MAPPING_CSV, SAMPLE_CSV } from '../pipeline/_setup.js';

const COMMANDS = ['run', 'preview', 'check', 'report', 'init', 'export', 'jobs', 'agents', 'sandbox', 'resolve', 'prune'];

/** Every stderr line, parsed; fails the test on a line that is not one JSON object of run's shape. */
function jsonLines(result: CliResult): Record<string, unknown>[] {
  return result.stderr.split('\n').filter((line) => line !== '').map((line) => {
    let parsed: unknown;
    expect(() => (parsed = JSON.parse(line)), line).not.toThrow();
    expect(parsed, line).toEqual(expect.objectContaining({ level: expect.any(String), time: expect.any(String), msg: expect.any(String), name: 'quote-batch' }));
    return parsed as Record<string, unknown>;
  });
}

describe('--json-log on every command', () => {
  const tmp = useTempDir('quote-batch-json-every-');
  const cli = (args: readonly string[]) => runCli([...args, '--json-log'], { cwd: tmp.dir, timeoutMs: 30_000 });

  it.each(COMMANDS)('%s declares --json-log', async (command) => {
    const help = await runCli([command, '--help'], { cwd: tmp.dir, timeoutMs: 30_000 });
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/--json-log\s+machine-readable JSON log lines on stderr/);
  });

  it('preview: an error, and a preview, write JSON lines only', async () => {
    const missing = await cli(['preview', tmp.path('missing.csv'), '--mapping', MAPPING_CSV]);
    expect(missing.code).toBe(2);
    expect(jsonLines(missing)).toEqual([expect.objectContaining({ level: 'error', event: 'error', code: 'E_INPUT', exit_code: 2, hint: expect.any(String) })]);
    const both = await cli(['preview', SAMPLE_CSV, '--mapping', MAPPING_CSV, '--rows', '2', '--row', '1']);
    expect(both.code).toBe(2);
    expect(jsonLines(both)).toEqual([expect.objectContaining({ code: 'E_USAGE', msg: 'give either --rows or --row, not both' })]);
    const ok = await cli(['preview', SAMPLE_CSV, '--mapping', MAPPING_CSV, '--row', '17']);
    expect(ok.code).toBe(1);
    expect(jsonLines(ok)).toEqual([]);
    expect(ok.stdout).toMatch(/── row 17/);
  });

  it('init: a refused --out, and a draft, write JSON lines only', async () => {
    writeFileSync(tmp.path('taken.yaml'), 'x: 1\n');
    const taken = await cli(['init', SAMPLE_CSV, '--out', tmp.path('taken.yaml')]);
    expect(taken.code).toBe(2);
    expect(jsonLines(taken)).toEqual([expect.objectContaining({ level: 'error', code: 'E_USAGE', hint: 'give another --out file, or add --force to replace it', exit_code: 2 })]);
    const drafted = await cli(['init', SAMPLE_CSV, '--out', tmp.path('draft.yaml')]);
    expect(drafted.code).toBe(0);
    expect(jsonLines(drafted)).toEqual([]);
  });

  it('sandbox: the signal notice and the closing line are JSON', async () => {
    const { child, done } = startCli(['sandbox', '--port', '0', '--json-log'], { cwd: tmp.dir, timeoutMs: 30_000 });
    let stdout = '';
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
    for (let waited = 0; waited < 20_000 && !/listening on/.test(stdout); waited += 50) await new Promise((r) => setTimeout(r, 50));
    expect(stdout).toMatch(/quote-batch sandbox listening on http:\/\/127\.0\.0\.1:\d+/);
    child.kill('SIGTERM');
    const result = await done;
    expect(result.code).toBe(0);
    expect(jsonLines(result)).toEqual([
      expect.objectContaining({ level: 'warn', event: 'signal', signal: 'SIGTERM' }),
      expect.objectContaining({ level: 'info', event: 'sandbox_stopped', requests: 0, msg: 'quote-batch sandbox stopped after 0 request(s)' }),
    ]);
  });

  it('sandbox: a bad flag is one JSON usage line', async () => {
    const result = await cli(['sandbox', '--rps-mode', 'sometimes']);
    expect(result.code).toBe(2);
    expect(jsonLines(result)).toEqual([expect.objectContaining({ level: 'error', code: 'E_USAGE', exit_code: 2 })]);
  });
});
