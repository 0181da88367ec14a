import { statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import {
  boundJson, boundKey, boundText, Ledger, MAX_STORED_ID_CHARS, MAX_STORED_JSON_CHARS, MAX_STORED_MESSAGE_CHARS,
} from '../../src/ledger/index.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { STOPPED } from '../../src/pipeline/row-state.js';

const newJob = {
  input_path: '/tmp/in.csv', input_sha256: 'a'.repeat(64), input_format: 'csv', mapping_path: 'm.yaml',
  mapping_sha256: 'b'.repeat(64), environment: 'sandbox', operation: 'quote', base_url: null,
} as const;

describe('bounds on stored texts', () => {
  it.each([
    ['short text kept', 'abc', 10, 'abc'],
    ['null kept', null, 10, null],
    ['cut with its length', 'abcdefghijkl', 4, 'abcd…[cut: 12 chars]'],
    ['no half surrogate pair', `abc${'😀'}def`, 4, 'abc…[cut: 8 chars]'],
  ])('boundText: %s', (_name, text, max, expected) => {
    expect(boundText(text, max)).toBe(expected);
  });

  it('boundKey keeps equal keys equal and different long keys different', () => {
    const long = 'k'.repeat(1000);
    expect(boundKey(long)).toBe(boundKey(`${long}`));
    expect(boundKey(`${long}a`)).not.toBe(boundKey(`${long}b`));
    expect(boundKey(long).length).toBeLessThan(MAX_STORED_ID_CHARS + 64);
    expect(boundKey('short')).toBe('short');
  });

  it('boundJson keeps a cut document valid JSON that says it was cut', () => {
    const doc = JSON.stringify({ message: '"quoted" '.repeat(50_000) });
    const cut = boundJson(doc) as string;
    expect(cut.length).toBeLessThanOrEqual(MAX_STORED_JSON_CHARS + 100);
    expect(JSON.parse(cut)).toMatchObject({ _cut: true, chars: doc.length });
    expect(boundJson('{"a":1}')).toBe('{"a":1}');
  });

  describe('through the Ledger API', () => {
    const tmp = useTempDir();

    it('stores a 1 MB agent id and a 5 MB response small', () => {
      const path = tmp.path('l.db');
      const ledger = Ledger.open(path);
      const job = ledger.createJob(newJob);
      const { run } = ledger.startRun(job.id, '{}', 'test', STOPPED);
      const huge = { id: 'A'.repeat(1 << 20), body: JSON.stringify({ status: 'success', junk: 'x'.repeat(5 << 20) }) };
      ledger.insertRows(job.id, [{ rowNumber: 1, rowKey: 'K'.repeat(1 << 20), agentEmail: `${'e'.repeat(1 << 20)}@example.com`, state: 'pending' }]);
      ledger.markInFlight(job.id, 1, huge.id, huge.body);
      ledger.recordOutcome(job.id, run.id, 1, {
        state: 'succeeded', attempts: 1, agentId: huge.id, httpStatus: 200, errorMessage: 'm'.repeat(1 << 20),
        transactionId: huge.id, quoteNumber: huge.id, inputIssuesJson: huge.body, requestJson: huge.body, responseJson: huge.body,
      }, [{ kind: 'quote', startedAt: new Date().toISOString(), durationMs: 1, httpStatus: 200, errorCode: 'C'.repeat(1 << 20), outcome: 'ok' }]);
      ledger.upsertAgent({
        environment: 'sandbox', email: 'a'.repeat(1 << 20), is_valid: 1, agent_id: huge.id, message: huge.body, checked_at: new Date().toISOString(), job_id: job.id,
      });
      ledger.finishRun(run.id, 'completed');
      ledger.db.pragma('wal_checkpoint(TRUNCATE)');
      ledger.close();

      const db = new Database(path, { readonly: true });
      const row = db.prepare('SELECT * FROM rows').get() as Record<string, string>;
      for (const column of ['agent_id', 'transaction_id', 'quote_number', 'row_key', 'agent_email']) {
        expect(row[column]?.length, column).toBeLessThan(MAX_STORED_ID_CHARS + 64);
        expect(row[column], column).toMatch(/…\[cut: \d+ chars/);
      }
      expect(row.error_message?.length).toBeLessThan(MAX_STORED_MESSAGE_CHARS + 32);
      for (const column of ['request_json', 'response_json', 'input_issues_json']) {
        expect(row[column]?.length, column).toBeLessThanOrEqual(MAX_STORED_JSON_CHARS + 100);
        expect(JSON.parse(row[column] as string), column).toMatchObject({ _cut: true });
      }
      const agent = db.prepare('SELECT * FROM agents').get() as Record<string, string>;
      expect(agent.agent_id?.length).toBeLessThan(MAX_STORED_ID_CHARS + 64);
      expect(agent.message?.length).toBeLessThan(MAX_STORED_MESSAGE_CHARS + 32);
      expect(agent.email?.length).toBeLessThan(MAX_STORED_ID_CHARS + 64);
      expect((db.prepare('SELECT error_code FROM attempts').pluck().get() as string).length).toBeLessThan(MAX_STORED_ID_CHARS + 64);
      db.close();
      // About 20 MB went in; what is kept is a few hundred KB at most.
      expect(statSync(path).size).toBeLessThan(1 << 20);
    });

    it('finds a long row key and a long agent e-mail again by their full text', () => {
      const ledger = Ledger.open(tmp.path('l.db'));
      const job = ledger.createJob(newJob);
      const key = 'click-'.repeat(200);
      const email = `${'agent.'.repeat(100)}@example.com`;
      ledger.insertRows(job.id, [{ rowNumber: 1, rowKey: key, agentEmail: email, state: 'pending' }]);
      expect(ledger.hasRowKey(job.id, key)).toBe(true);
      expect(ledger.hasRowKey(job.id, `${key}x`)).toBe(false);
      ledger.upsertAgent({ environment: 'sandbox', email, is_valid: 1, agent_id: 'A1', message: null, checked_at: new Date().toISOString(), job_id: job.id });
      expect(ledger.getAgent('sandbox', email)?.agent_id).toBe('A1');
      ledger.close();
    });
  });
});
