/**
 * What the ledger keeps of a request body (`--store-requests`). `masked` replaces the personal
 * data docs/ledger.md lists — names, date of birth, phone, e-mail, street address, licence id and IP —
 * and keeps what analysts need to explain an outcome (states, vehicles, coverage, pricing).
 */
import type { StoreRequests } from '../config/index.js';
import type { RowIssue } from '../mapping/index.js';

export const MASK = '***';

export function serializeRequest(request: Record<string, unknown>, mode: StoreRequests): string | null {
  if (mode === 'none') return null;
  if (mode === 'full') return JSON.stringify(request);
  return JSON.stringify(maskRequest(request));
}

/**
 * Returns a copy of `request` with personal data replaced by {@link MASK}; never mutates it.
 * Only the objects on the way to a masked value are copied (shallowly): this runs once per row.
 */
export function maskRequest(request: Record<string, unknown>): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...request };
  const application = asRecord(request.application);
  if (application !== undefined && Array.isArray(application.drivers)) {
    copy.application = { ...application, drivers: application.drivers.map(maskDriver) };
  }
  const tracking = asRecord(request.tracking);
  if (tracking !== undefined) copy.tracking = masked(tracking, ['consumer_source_ip']);
  return copy;
}

function maskDriver(value: unknown): unknown {
  const driver = asRecord(value);
  if (driver === undefined) return value;
  const copy = masked(driver, ['dob']);
  const parts: [string, readonly string[]][] = [
    ['name', ['first_name', 'last_name', 'middle_name', 'suffix']],
    ['contact_info', ['phone', 'email']],
    ['address', ['address_line_1', 'address_line_2']],
    ['driver_license', ['id']],
  ];
  for (const [key, keys] of parts) {
    const part = asRecord(driver[key]);
    if (part !== undefined) copy[key] = masked(part, keys);
  }
  return copy;
}

/** A shallow copy of `target` with the non-empty values of `keys` replaced by {@link MASK}. */
function masked(target: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const copy = { ...target };
  for (const key of keys) {
    if (copy[key] !== undefined && copy[key] !== null && copy[key] !== '') copy[key] = MASK;
  }
  return copy;
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** Request paths whose values are personal data (the same set {@link maskRequest} replaces). */
const PERSONAL_PATH =
  /^application\.drivers\[\d+\]\.(name\.(first_name|last_name|middle_name|suffix)|dob|contact_info\.(phone|email)|address\.address_line_[12]|driver_license\.id)$|^tracking\.consumer_source_ip$/;

/**
 * A row issue fit for the ledger: when it concerns a personal-data field, the offending value
 * is replaced by {@link MASK} in the issue and in its message (`got "13/45/1990"` → `got "***"`).
 */
export function maskIssue(issue: RowIssue): RowIssue {
  if (!PERSONAL_PATH.test(issue.path) || issue.received === undefined || issue.received === null) return issue;
  const raw = typeof issue.received === 'string' ? issue.received : JSON.stringify(issue.received);
  return { ...issue, received: MASK, message: raw === '' ? issue.message : issue.message.split(raw).join(MASK) };
}
