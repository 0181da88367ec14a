// Quote and lead: the public reference's bodies, the three named 400 cases, premiums, input_issues.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UUID_LIKE, QuoteSuccessResponse, LeadSuccessResponse, ErrorResponse } from '../../src/partner/schemas.js';
import { startSandbox, UNSUPPORTED_STATES, type SandboxHandle } from '../../src/sandbox/index.js';
import { AGENTS_FILE, KEY, LEAD, post, QUOTE, readFixture } from './_client.js';

let sandbox: SandboxHandle;

beforeAll(async () => {
  sandbox = await startSandbox({ apiKey: KEY, agentsFile: AGENTS_FILE });
});
afterAll(async () => {
  await sandbox.close();
});

interface QuoteBody {
  status: string;
  message: string;
  transaction_id: string;
  ubi: { participation_option: string };
  quote: {
    quote_number: string;
    premium_summary: {
      total_premium: number; initial_premium: number; monthly_premium: number; paid_in_full_premium: number; policy_term: number;
    };
  };
  bridge_urls: { consumer_bridge_url: string; agent_bridge_url: string };
  input_issues?: unknown[];
}

describe('quote: 200', () => {
  it('answers the public reference success body', async () => {
    const reply = await post(sandbox.url, QUOTE, readFixture('quote-valid'));
    expect(reply.status).toBe(200);
    const body = reply.json as QuoteBody;
    expect(Object.keys(body).sort()).toEqual(['bridge_urls', 'message', 'quote', 'status', 'transaction_id', 'ubi']);
    expect(body.status).toBe('success');
    expect(body.message).toBe('Processed successfully.');
    expect(body.transaction_id).toMatch(UUID_LIKE);
    expect(body.ubi).toEqual({ participation_option: 'monthly_adjust' });
    expect(body.quote.quote_number).toMatch(/^[A-Z0-9]{15}$/);
    const summary = body.quote.premium_summary;
    expect(summary.policy_term).toBe(6);
    expect(summary.total_premium).toBeGreaterThan(0);
    expect(summary.paid_in_full_premium).toBe(summary.total_premium);
    // As in the public example: total = initial + 5 × monthly, monthly a whole amount.
    expect(Number.isInteger(summary.monthly_premium)).toBe(true);
    expect(summary.initial_premium + 5 * summary.monthly_premium).toBeCloseTo(summary.total_premium, 2);
    expect(body.bridge_urls.consumer_bridge_url).toBe(
      `https://bridge.sandbox.invalid/quote?sub4=${body.transaction_id}&partner=partner-sbx&sub1=click-0001`,
    );
    expect(body.bridge_urls.agent_bridge_url).toBe(`https://agents.sandbox.invalid/quote?transactionId=${body.transaction_id}`);
    // The client's own response schema accepts it.
    expect(QuoteSuccessResponse.safeParse(body).success).toBe(true);
  });

  it('gives each quote its own transaction id and quote number', async () => {
    const first = (await post(sandbox.url, QUOTE, readFixture('quote-valid'))).json as QuoteBody;
    const second = (await post(sandbox.url, QUOTE, readFixture('quote-valid'))).json as QuoteBody;
    expect(second.transaction_id).not.toBe(first.transaction_id);
    expect(second.quote.quote_number).not.toBe(first.quote.quote_number);
  });

  it('computes the same premium for the same request, also in another sandbox', async () => {
    const other = await startSandbox({ apiKey: KEY, seed: 99 });
    try {
      const a = (await post(sandbox.url, QUOTE, readFixture('quote-valid'))).json as QuoteBody;
      const b = (await post(other.url, QUOTE, readFixture('quote-valid'))).json as QuoteBody;
      expect(b.quote.premium_summary).toStrictEqual(a.quote.premium_summary);
    } finally {
      await other.close();
    }
  });

  it('charges more for a riskier household (a young driver with an at-fault accident)', async () => {
    const base = (await post(sandbox.url, QUOTE, readFixture('quote-valid'))).json as QuoteBody;
    const risky = (await post(sandbox.url, QUOTE, readFixture('riskier-household'))).json as QuoteBody;
    expect(risky.quote.premium_summary.total_premium).toBeGreaterThan(base.quote.premium_summary.total_premium);
  });

  it('charges less without collision and comprehensive coverage', async () => {
    const request = readFixture('quote-valid') as { application: { coverage: { vehicle_coverage: Record<string, unknown>[] } } };
    const full = (await post(sandbox.url, QUOTE, request)).json as QuoteBody;
    const entry = request.application.coverage.vehicle_coverage[0]!;
    delete entry.coll;
    delete entry.comp;
    const liabilityOnly = (await post(sandbox.url, QUOTE, request)).json as QuoteBody;
    expect(liabilityOnly.quote.premium_summary.total_premium).toBeLessThan(full.quote.premium_summary.total_premium);
  });

  it('reports coerced coverage values as input_issues warnings', async () => {
    const reply = await post(sandbox.url, QUOTE, readFixture('coverage-coerced'));
    expect(reply.status).toBe(200);
    expect((reply.json as QuoteBody).input_issues).toStrictEqual([
      {
        path: 'application.coverage.vehicle_coverage[0].umpd',
        severity: 'warning',
        type: 'rule_violation',
        message: expect.any(String),
        original_value: '100',
        resolved_value: 'declined',
      },
      {
        path: 'application.coverage.vehicle_coverage[0].loan_payoff',
        severity: 'warning',
        type: 'rule_violation',
        message: expect.any(String),
        original_value: 'true',
        resolved_value: 'false',
      },
    ]);
  });

  it('does not warn about loan_payoff on a financed vehicle or umpd without collision', async () => {
    const request = readFixture('quote-valid') as {
      application: { coverage: { vehicle_coverage: Record<string, unknown>[] } };
    };
    const entry = request.application.coverage.vehicle_coverage[0]!;
    Object.assign(entry, { loan_payoff: true, umpd: '100' });
    delete entry.coll;
    const reply = await post(sandbox.url, QUOTE, request);
    expect(reply.status).toBe(200);
    expect((reply.json as QuoteBody).input_issues).toBeUndefined();
  });
});

describe('lead: 200', () => {
  it('answers the same body without quote', async () => {
    const reply = await post(sandbox.url, LEAD, readFixture('lead-valid'));
    expect(reply.status).toBe(200);
    const body = reply.json as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['bridge_urls', 'message', 'status', 'transaction_id', 'ubi']);
    expect(body.status).toBe('success');
    expect(body.message).toBe('Processed successfully.');
    expect(body.transaction_id).toMatch(UUID_LIKE);
    expect(LeadSuccessResponse.safeParse(body).success).toBe(true);
  });

  it('reports input_issues on a lead too', async () => {
    const reply = await post(sandbox.url, LEAD, readFixture('coverage-coerced'));
    expect(reply.status).toBe(200);
    const issues = (reply.json as { input_issues: { path: string }[] }).input_issues;
    expect(issues.map((issue) => issue.path)).toEqual([
      'application.coverage.vehicle_coverage[0].umpd',
      'application.coverage.vehicle_coverage[0].loan_payoff',
    ]);
  });
});

describe.each([['quote', QUOTE], ['lead', LEAD]])('%s: errors', (_name, path) => {
  it.each([
    ['missing-channel-id', 'missing_required_parameter', /channel\.channel_id/],
    ['empty-channel-id', 'missing_required_parameter', /channel\.channel_id/],
    ['missing-drivers', 'missing_required_parameter', /application\.drivers/],
    ['empty-vehicles', 'missing_required_parameter', /application\.vehicles/],
    ['state-not-supported', 'state_not_supported', /AK/],
    ['no-eligible-vehicle', 'eligible_vehicle_not_found', /eligible vehicle/i],
  ])('400 for %s', async (fixture, errorCode, message) => {
    const reply = await post(sandbox.url, path, readFixture(fixture));
    expect(reply.status).toBe(400);
    expect(reply.json).toStrictEqual({ status: 'failed', message: expect.stringMatching(message), error_code: errorCode });
    expect(ErrorResponse.safeParse(reply.json).success).toBe(true);
  });

  it.each(UNSUPPORTED_STATES)('400 state_not_supported for a primary driver in %s', async (state) => {
    const request = readFixture('quote-valid') as { application: { drivers: { address: { state: string } }[] } };
    request.application.drivers[0]!.address.state = state;
    const reply = await post(sandbox.url, path, request);
    expect(reply.status).toBe(400);
    expect((reply.json as { error_code: string }).error_code).toBe('state_not_supported');
  });

  it('accepts an unsupported state on a second driver', async () => {
    const request = readFixture('riskier-household') as { application: { drivers: { address: { state: string } }[] } };
    request.application.drivers[1]!.address = { state: 'HI' };
    expect((await post(sandbox.url, path, request)).status).toBe(200);
  });

  it('accepts a 1981 vehicle and rejects a 1980 one', async () => {
    const request = readFixture('quote-valid') as { application: { vehicles: { year: number }[] } };
    request.application.vehicles[0]!.year = 1981;
    expect((await post(sandbox.url, path, request)).status).toBe(200);
    request.application.vehicles[0]!.year = 1980;
    const reply = await post(sandbox.url, path, request);
    expect((reply.json as { error_code: string }).error_code).toBe('eligible_vehicle_not_found');
  });

  it('400 invalid_request for a body that is not JSON', async () => {
    const reply = await post(sandbox.url, path, '{"channel": ');
    expect(reply.status).toBe(400);
    expect(reply.json).toStrictEqual({ status: 'failed', message: expect.any(String), error_code: 'invalid_request' });
  });

  it('403 {"message":"Forbidden"} for a missing or wrong key', async () => {
    for (const key of [null, 'wrong-key']) {
      const reply = await post(sandbox.url, path, readFixture('quote-valid'), key);
      expect(reply.status).toBe(403);
      expect(reply.json).toStrictEqual({ message: 'Forbidden' });
    }
  });
});
