/**
 * The business rules of the sandbox's quote and lead operations: the three named 400 cases,
 * the coercions reported as `input_issues`, and the deterministic premium.
 *
 * The partner publishes none of its rating rules; these are made up, but they are fixed, so a
 * test (and the samples) can rely on them. Requests are read defensively: the sandbox receives
 * whatever a caller sends, and a malformed member must yield a 400 or a default, never a crash.
 */

/** Primary-driver states the sandbox refuses with `state_not_supported`. */
export const UNSUPPORTED_STATES: readonly string[] = Object.freeze(['AK', 'HI', 'MA']);

/** Oldest model year a vehicle may have to be eligible. */
export const MIN_ELIGIBLE_YEAR = 1981;

/** A 400 answer of quote/lead. */
export interface RuleViolation {
  errorCode: 'invalid_request' | 'missing_required_parameter' | 'state_not_supported' | 'eligible_vehicle_not_found';
  message: string;
}

/** One `input_issues` entry, as in the public reference. */
export interface SandboxInputIssue {
  path: string;
  severity: 'warning';
  type: 'rule_violation';
  message: string;
  original_value: string;
  resolved_value: string;
}

type Json = Record<string, unknown>;

export function asObject(value: unknown): Json | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : undefined;
}

function asArray(value: unknown): unknown[] | undefined {
  return Array.isArray(value) ? value : undefined;
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value.trim() !== '';
}

/**
 * Checks the three named 400 cases (shared rules) in a fixed order: missing parameters first,
 * then the primary driver's state, then vehicle eligibility. Returns undefined when the request passes.
 */
export function checkQuoteRequest(body: unknown): RuleViolation | undefined {
  const root = asObject(body);
  if (root === undefined) return { errorCode: 'invalid_request', message: 'Request body must be a JSON object.' };
  const channel = asObject(root.channel);
  if (!isNonEmptyString(channel?.channel_id)) return missing('channel.channel_id');
  const application = asObject(root.application);
  const drivers = asArray(application?.drivers);
  if (drivers === undefined || drivers.length === 0) return missing('application.drivers');
  const vehicles = asArray(application?.vehicles);
  if (vehicles === undefined || vehicles.length === 0) return missing('application.vehicles');

  const state = asObject(asObject(drivers[0])?.address)?.state;
  if (typeof state === 'string' && UNSUPPORTED_STATES.includes(state.trim().toUpperCase())) {
    return { errorCode: 'state_not_supported', message: `State ${state.trim().toUpperCase()} is not supported.` };
  }
  if (!vehicles.some(isEligibleVehicle)) {
    return {
      errorCode: 'eligible_vehicle_not_found',
      message: `No eligible vehicle found: a vehicle must be model year ${MIN_ELIGIBLE_YEAR} or later and not in commercial use.`,
    };
  }
  return undefined;
}

function missing(parameter: string): RuleViolation {
  return { errorCode: 'missing_required_parameter', message: `Missing required parameter: ${parameter}` };
}

function isEligibleVehicle(value: unknown): boolean {
  const vehicle = asObject(value);
  if (vehicle === undefined) return false;
  const year = Number(vehicle.year);
  return Number.isFinite(year) && year >= MIN_ELIGIBLE_YEAR && asObject(vehicle.usage)?.primary_use !== 'commercial';
}

/**
 * Applies the coercion rules to the per-vehicle coverage and reports each change as a warning:
 * - `umpd` sent on a vehicle that also has collision (`coll`) → `"declined"` (collision already pays);
 * - `loan_payoff: true` on a vehicle whose `ownership.type` is `owned` → `false` (no loan to pay off).
 * Returns the resolved per-vehicle coverage (copies; the request is not changed) and the issues.
 */
export function resolveVehicleCoverage(application: Json | undefined): { coverage: Json[]; issues: SandboxInputIssue[] } {
  const issues: SandboxInputIssue[] = [];
  const entries = asArray(asObject(application?.coverage)?.vehicle_coverage) ?? [];
  const vehicles = asArray(application?.vehicles) ?? [];
  const coverage = entries.map((entry, index) => {
    const resolved: Json = { ...(asObject(entry) ?? {}) };
    const base = `application.coverage.vehicle_coverage[${index}]`;
    if (resolved.umpd !== undefined && resolved.umpd !== 'declined' && hasCollision(resolved)) {
      issues.push(warning(`${base}.umpd`, 'UMPD is not offered on a vehicle with collision coverage; it was declined.', resolved.umpd, 'declined'));
      resolved.umpd = 'declined';
    }
    const ownership = asObject(asObject(vehicles[index])?.ownership)?.type;
    if (resolved.loan_payoff === true && ownership === 'owned') {
      issues.push(warning(`${base}.loan_payoff`, 'Loan/lease payoff needs a financed or leased vehicle; it was removed.', true, false));
      resolved.loan_payoff = false;
    }
    return resolved;
  });
  return { coverage, issues };
}

function hasCollision(entry: Json): boolean {
  return isNonEmptyString(entry.coll) && entry.coll !== 'declined';
}

function warning(path: string, message: string, original: unknown, resolved: unknown): SandboxInputIssue {
  return {
    path,
    severity: 'warning',
    type: 'rule_violation',
    message,
    original_value: String(original),
    resolved_value: String(resolved),
  };
}

/** The premium summary of a six-month policy, as in the public reference. */
export interface SandboxPremiumSummary {
  total_premium: number;
  initial_premium: number;
  monthly_premium: number;
  paid_in_full_premium: number;
  policy_term: 6;
}

/** Date ages are computed against when the request has no `effective_date` (kept fixed for determinism). */
const REFERENCE_DATE = '2026-01-01';

/**
 * A made-up but deterministic six-month premium: the same request always costs the same, and
 * more drivers, younger drivers, incidents, more vehicles and richer coverage cost more.
 * `vehicleCoverage` is the resolved coverage of {@link resolveVehicleCoverage}.
 */
export function computePremium(application: Json, vehicleCoverage: readonly Json[]): SandboxPremiumSummary {
  const drivers = (asArray(application.drivers) ?? []).map((d) => asObject(d) ?? {});
  const vehicles = (asArray(application.vehicles) ?? []).map((v) => asObject(v) ?? {});
  const effective = application.effective_date;
  const asOf = typeof effective === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(effective) ? effective : REFERENCE_DATE;
  const policy = asObject(asObject(application.coverage)?.policy_coverage) ?? {};

  let driverFactor = 0;
  for (const driver of drivers) driverFactor += rateDriver(driver, asOf);
  // The average driver sets the risk; every extra driver adds a little exposure.
  driverFactor = (driverFactor / Math.max(1, drivers.length)) * (1 + 0.12 * Math.max(0, drivers.length - 1));

  const liability = 160 * limitFactor(policy.bi, 25) + 40 * limitFactor(policy.pd, 25) +
    (isNonEmptyString(policy.um) ? 25 * limitFactor(policy.um, 25) : 0) +
    (isNonEmptyString(policy.uim) ? 15 * limitFactor(policy.uim, 25) : 0) +
    (isNonEmptyString(policy.med) ? 12 : 0);

  let total = 0;
  vehicles.forEach((vehicle, index) => {
    const cov = vehicleCoverage[index] ?? {};
    let physical = 0;
    if (hasCollision(cov)) physical += 150 * deductibleFactor(cov.coll);
    if (isNonEmptyString(cov.comp) && cov.comp !== 'declined') physical += 55 * deductibleFactor(cov.comp);
    if (isNonEmptyString(cov.rent)) physical += 18;
    if (cov.tow === true) physical += 6;
    if (cov.loan_payoff === true) physical += 14;
    if (cov.full_glass === true) physical += 22;
    if (isNonEmptyString(cov.umpd) && cov.umpd !== 'declined') physical += 9;
    total += (liability + physical) * rateVehicle(vehicle, asOf);
  });
  total = round2(total * driverFactor);

  // The public example: total 546.5 = initial 91.5 + 5 × monthly 91.
  const monthly = Math.floor(total / 6);
  return {
    total_premium: total,
    initial_premium: round2(total - 5 * monthly),
    monthly_premium: monthly,
    paid_in_full_premium: total,
    policy_term: 6,
  };
}

function rateDriver(driver: Json, asOf: string): number {
  const age = yearsBetween(driver.dob, asOf) ?? 35;
  let factor = age < 21 ? 1.9 : age < 25 ? 1.5 : age < 30 ? 1.2 : age < 65 ? 1 : 1.15;
  for (const value of asArray(driver.incident_history) ?? []) {
    factor += asObject(value)?.is_at_fault === true ? 0.3 : 0.08;
  }
  const license = asObject(driver.driver_license);
  const yearsLicensed = Number(license?.years_licensed);
  if (Number.isFinite(yearsLicensed) && yearsLicensed < 3) factor += 0.2;
  if (asObject(driver.student_profile)?.is_good_student === true) factor -= 0.05;
  return factor;
}

function rateVehicle(vehicle: Json, asOf: string): number {
  const year = Number(vehicle.year);
  const age = Number.isFinite(year) ? Number(asOf.slice(0, 4)) - year : 10;
  let factor = age <= 3 ? 1.15 : age <= 10 ? 1 : 0.85;
  const usage = asObject(vehicle.usage);
  if (usage?.primary_use === 'commute') factor *= 1.08;
  else if (usage?.primary_use === 'business') factor *= 1.2;
  else if (usage?.primary_use === 'pleasure') factor *= 0.92;
  const mileage = Number(usage?.annual_mileage);
  if (Number.isFinite(mileage) && mileage > 0) factor *= Math.min(1.4, Math.max(0.8, Math.sqrt(mileage / 12_000)));
  if (vehicle.is_ride_sharing === true) factor *= 1.15;
  return factor;
}

/** `50/100` or `25` → a factor growing slowly with the (first) limit. */
function limitFactor(value: unknown, baseline: number): number {
  const first = typeof value === 'string' ? Number(value.split('/')[0]) : NaN;
  return Number.isFinite(first) && first > 0 ? Math.pow(first / baseline, 0.25) : 1;
}

/** `500_ded` → 1; a higher deductible lowers the cost. */
function deductibleFactor(value: unknown): number {
  const amount = typeof value === 'string' ? Number(value.split('_')[0]) : NaN;
  return Number.isFinite(amount) && amount >= 0 ? 1000 / (amount + 500) : 1;
}

function yearsBetween(dob: unknown, asOf: string): number | undefined {
  if (typeof dob !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(dob)) return undefined;
  let years = Number(asOf.slice(0, 4)) - Number(dob.slice(0, 4));
  if (asOf.slice(5) < dob.slice(5)) years -= 1;
  return Number.isFinite(years) && years >= 0 ? years : undefined;
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}
