import { describe, expect, it } from 'vitest';
import { maskRequest, MASK, serializeRequest } from '../../src/pipeline/mask.js';
import { estimateTotalRows } from '../../src/pipeline/progress.js';
import { exitCodeFor, type ProgressSnapshot } from '../../src/pipeline/run-job.js';

const request = {
  channel: { channel_id: 'c1' },
  application: {
    drivers: [
      {
        name: { first_name: 'Testy', last_name: 'Maskerson', middle_name: '' },
        dob: '1990-01-02',
        contact_info: { phone: '5550100123', email: 'testy@example.com' },
        address: { address_line_1: '1 Fake St', city: 'Austin', state: 'TX', zip: '78701' },
        driver_license: { id: 'LIC123', state: 'TX' },
      },
    ],
    vehicles: [{ vin: '1HGCM82633A004352', make: 'Honda', model: 'Accord', year: 2015 }],
  },
  tracking: { click_id: 'clk-1', consumer_source_ip: '198.51.100.7' },
};

describe('maskRequest', () => {
  it('replaces names, dob, phone, e-mail, street address, licence id and IP, and keeps the rest', () => {
    const masked = maskRequest(request) as typeof request;
    const driver = masked.application.drivers[0];
    expect(driver?.name).toEqual({ first_name: MASK, last_name: MASK, middle_name: '' });
    expect(driver?.dob).toBe(MASK);
    expect(driver?.contact_info).toEqual({ phone: MASK, email: MASK });
    expect(driver?.address).toEqual({ address_line_1: MASK, city: 'Austin', state: 'TX', zip: '78701' });
    expect(driver?.driver_license).toEqual({ id: MASK, state: 'TX' });
    expect(masked.tracking).toEqual({ click_id: 'clk-1', consumer_source_ip: MASK });
    expect(masked.application.vehicles).toEqual(request.application.vehicles);
    expect(request.application.drivers[0]?.dob).toBe('1990-01-02'); // the original is untouched
  });

  it('stores nothing, the masked body or the full body per --store-requests', () => {
    expect(serializeRequest(request, 'none')).toBeNull();
    expect(serializeRequest(request, 'masked')).not.toContain('LIC123');
    expect(serializeRequest(request, 'full')).toContain('LIC123');
  });
});

describe('progress and exit codes', () => {
  const snapshot = (over: Partial<ProgressSnapshot>): ProgressSnapshot => ({
    jobId: 1, counts: {} as ProgressSnapshot['counts'], rowsRead: 0, rowsDoneThisRun: 0, rowsSkipped: 0,
    bytesRead: 0, lastOffset: 0, totalBytes: 1000, totalRows: null, elapsedMs: 1, ...over,
  });

  it('estimates the row total from the position of the last record read', () => {
    expect(estimateTotalRows(snapshot({ rowsRead: 10, lastOffset: 100, bytesRead: 500 }))).toBe(100);
    expect(estimateTotalRows(snapshot({ rowsRead: 10, lastOffset: 5000, bytesRead: 500 }))).toBe(20); // compressed
    expect(estimateTotalRows(snapshot({ totalRows: 42 }))).toBe(42);
    expect(estimateTotalRows(snapshot({}))).toBe(0);
  });

  it('maps a run end and its counts to the exit codes of the README', () => {
    const counts = { pending: 0, in_flight: 0, succeeded: 3, rejected: 0, agent_invalid: 0, invalid: 0, duplicate: 1, failed: 0, in_doubt: 0 };
    expect(exitCodeFor('completed', counts)).toBe(0);
    expect(exitCodeFor('completed', { ...counts, rejected: 1 })).toBe(1);
    expect(exitCodeFor('completed', { ...counts, agent_invalid: 1 })).toBe(1);
    expect(exitCodeFor('unfinished', counts)).toBe(3);
    expect(exitCodeFor('interrupted', counts)).toBe(3);
    expect(exitCodeFor('halted', counts)).toBe(3);
  });
});
