/**
 * What the ledger keeps of a request body (`--store-requests`). `masked` replaces the personal
 * data of contract §6 — names, date of birth, phone, e-mail, street address, licence id and IP —
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

/** Returns a copy of `request` with personal data replaced by {@link MASK}; never mutates it. */
export function maskRequest(request: Record<string, unknown>): Record<string, unknown> {
  const copy = structuredClone(request);
  const application = asRecord(copy.application);
  const drivers = application?.drivers;
  if (Array.isArray(drivers)) {
    for (const value of drivers) {
      const driver = asRecord(value);
      if (driver === undefined) continue;
      const name = asRecord(driver.name);
      if (name !== undefined) maskKeys(name, ['first_name', 'last_name', 'middle_name', 'suffix']);
      maskKeys(driver, ['dob']);
      const contact = asRecord(driver.contact_info);
      if (contact !== undefined) maskKeys(contact, ['phone', 'email']);
      const address = asRecord(driver.address);
      if (address !== undefined) maskKeys(address, ['address_line_1', 'address_line_2']);
      const licence = asRecord(driver.driver_license);
      if (licence !== undefined) maskKeys(licence, ['id']);
    }
  }
  const tracking = asRecord(copy.tracking);
  if (tracking !== undefined) maskKeys(tracking, ['consumer_source_ip']);
  return copy;
}

function maskKeys(target: Record<string, unknown>, keys: readonly string[]): void {
  for (const key of keys) {
    if (target[key] !== undefined && target[key] !== null && target[key] !== '') target[key] = MASK;
  }
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
