/**
 * The partner interface as zod schemas (the partner's interface, filled in by
 * public-reference.md). Types are `z.infer` of the schemas, so the two cannot drift.
 *
 * Request schemas are as strict as the spec's formats; response schemas are loose (they accept
 * members we do not know) because the partner may add fields at any time.
 */
import { z } from 'zod';
import { KNOWN_VALUES } from './known-words.js';

// ---------------------------------------------------------------------------------------------
// Formats shared by several fields

/** `YYYY-MM-DD` and a real calendar date. */
export const isoDate = z.iso.date({ error: 'expected YYYY-MM-DD' });
const DAY_MS = 86_400_000;
/** The day {@link latestToday} last computed: its UTC+14 start, in ms since the epoch, and its date. */
const todayCache = { start: Number.NaN, date: '' };
/**
 * The latest calendar date anywhere on Earth now (UTC+14), `YYYY-MM-DD`: a date after it has not
 * happened yet anywhere.
 */
export function latestToday(nowMs: number = Date.now()): string {
  const shifted = nowMs + 14 * 3_600_000;
  if (!(shifted >= todayCache.start && shifted < todayCache.start + DAY_MS)) {
    todayCache.start = Math.floor(shifted / DAY_MS) * DAY_MS;
    todayCache.date = new Date(todayCache.start).toISOString().slice(0, 10);
  }
  return todayCache.date;
}
/**
 * A date that has happened (a date of birth, an incident): a real `YYYY-MM-DD` not in the future.
 * A birth date in the future is a misread year (`02/03/45` read as 2045), never a driver.
 */
export const pastDate = isoDate.refine((value) => value <= latestToday(), { error: 'expected a date not in the future' });
/** ISO 8601 timestamp in UTC (`Z`), e.g. `2026-11-20T18:04:05Z`. */
export const isoUtcTimestamp = z.iso.datetime({ error: 'expected an ISO 8601 UTC timestamp (…Z)' });
/** Hex groups 8-4-4-4-12; the partner's ids are "UUID-like", not always valid RFC 4122 UUIDs. */
export const UUID_LIKE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
export const uuidLike = z.string().regex(UUID_LIKE, { error: 'expected a UUID-like id (8-4-4-4-12 hex)' });
export const stateCode = z.string().regex(/^[A-Z]{2}$/, { error: 'expected a 2-letter upper-case state code' });
/** `<number>/<number>`, e.g. `50/100` (thousands of dollars per person / per accident). */
export const limitPair = z.string().regex(/^\d+\/\d+$/, { error: 'expected <number>/<number>' });
export const numberText = z.string().regex(/^\d+$/, { error: 'expected digits only' });
export const deductible = z.string().regex(/^\d+_ded$/, { error: 'expected <amount>_ded' });
export const rentalLimit = z
  .string()
  .regex(/^\d+_per_day_\d+_max$/, { error: 'expected <amount>_per_day_<amount>_max' });
export const perPerson = z.string().regex(/^\d+_per_person$/, { error: 'expected <amount>_per_person' });
export const phone10 = z.string().regex(/^\d{10}$/, { error: 'expected 10 digits' });
export const emailAddress = z.email({ error: 'expected an e-mail address' });
/**
 * What an agent e-mail must look like before it is sent for validation (`run` records a row whose
 * address fails this `invalid`; `agents` reports it without sending it): one `@`, a dot after it,
 * no space. The partner decides the rest.
 */
const AGENT_EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
export function isAgentEmail(text: string): boolean {
  return AGENT_EMAIL.test(text);
}
export const httpUrl = z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' });
export const ipAddress = z.union([z.ipv4(), z.ipv6()], { error: 'expected an IPv4 or IPv6 address' });
/** Enumerated words are open sets (see {@link KNOWN_VALUES}): only the shape is checked here. */
export const lowerWord = z.string().regex(/^[a-z][a-z0-9_]*$/, { error: 'expected a lower-case word' });
const nonNegativeInt = z.number().int({ error: 'expected an integer' }).nonnegative();
const nonEmpty = z.string().min(1, { error: 'expected a non-empty string' });

// ---------------------------------------------------------------------------------------------
// Agent validation (spec §2.1, §2.2)

export const AgentValidateRequest = z.object({
  /** Agent e-mail to validate. */
  email: emailAddress,
});
export type AgentValidateRequest = z.infer<typeof AgentValidateRequest>;

export const AgentValidateResponse = z.looseObject({
  status: z.string(),
  message: z.string(),
  data: z
    .looseObject({
      is_valid: z.boolean(),
      /** Present only when `is_valid` is true. */
      agent_id: z.string().optional(),
    })
    .optional(),
});
export type AgentValidateResponse = z.infer<typeof AgentValidateResponse>;

// ---------------------------------------------------------------------------------------------
// QuoteRequest (spec §2.3); required members per the public reference

export const Channel = z.object({
  /** Assigned by the insurer per partner. Required. */
  channel_id: nonEmpty,
  /** `<prefix>-<alphanumerics>`, the value returned by agent validation. */
  agent_id: z.string().regex(/^[A-Za-z0-9]+-[A-Za-z0-9]+$/, { error: 'expected <prefix>-<id>' }).optional(),
  /** Default `direct`; examples `direct`, `leadcloud`, `beacon` (open set). */
  integration_type: lowerWord.optional(),
  /** Deprecated by the partner in favour of `tracking.click_id`; non-empty when sent. */
  channel_lead_id: uuidLike.optional(),
});

export const DriverName = z.object({
  first_name: nonEmpty,
  last_name: nonEmpty,
  middle_name: z.string().optional(),
  suffix: z.string().optional(),
});

/** A ZIP code as the QuoteRequest takes it: 5 digits, or ZIP+4 with its hyphen. */
export const ZIP_CODE = /^\d{5}(-\d{4})?$/;

export const Address = z.object({
  address_line_1: z.string().optional(),
  address_line_2: z.string().optional(),
  city: z.string().optional(),
  state: stateCode.optional(),
  zip: z.string().regex(ZIP_CODE, { error: 'expected a 5-digit ZIP (or ZIP+4)' }).optional(),
  country: z.string().optional(),
});

export const Incident = z.object({
  /** Three upper-case letters, e.g. `ACC`, `SPD`. */
  code: z.string().regex(/^[A-Z]{3}$/, { error: 'expected a 3-letter code' }),
  incident_date: pastDate,
  is_at_fault: z.boolean(),
});

export const Driver = z.object({
  name: DriverName,
  dob: pastDate,
  gender: lowerWord.optional(),
  marital_status: lowerWord.optional(),
  contact_info: z
    .object({
      phone: phone10.optional(),
      email: emailAddress.optional(),
    })
    .optional(),
  /** `self` for the primary named insured. */
  relation_to_pni: lowerWord.optional(),
  address: Address.optional(),
  residence: z.object({ type: lowerWord.optional(), length_in_months: nonNegativeInt.optional() }).optional(),
  education: lowerWord.optional(),
  /** `code` is numeric text: keep leading zeros (`"010"`). */
  occupation: z.object({ code: numberText.optional(), description: z.string().optional() }).optional(),
  driver_license: z
    .object({
      id: z.string().optional(),
      state: stateCode.optional(),
      years_licensed: z.string().regex(/^\d+(\.\d+)?$/, { error: 'expected a number as text' }).optional(),
      type: z.string().optional(),
      status: lowerWord.optional(),
    })
    .optional(),
  student_profile: z
    .object({ is_good_student: z.boolean().optional(), is_distant_student: z.boolean().optional() })
    .optional(),
  incident_history: z.array(Incident).optional(),
  prior_insurance: z
    .object({
      effective_date: isoDate.optional(),
      expiration_date: isoDate.optional(),
      carrier: z.string().optional(),
      bi_coverage: limitPair.optional(),
    })
    .optional(),
  credit_rating: lowerWord.optional(),
  had_driver_training: z.boolean().optional(),
});

export const Vehicle = z.object({
  /** 17 letters and digits (I, O and Q excluded by the VIN standard, tolerated here). */
  vin: z.string().regex(/^[A-Za-z0-9]{17}$/, { error: 'expected a 17-character VIN' }),
  make: nonEmpty,
  model: nonEmpty,
  year: z.number().int({ error: 'expected an integer year' }).min(1900).max(2100),
  usage: z.object({ primary_use: lowerWord.optional(), annual_mileage: nonNegativeInt.optional() }).optional(),
  ownership: z.object({ type: lowerWord.optional(), length_in_months: nonNegativeInt.optional() }).optional(),
  is_ride_sharing: z.boolean().optional(),
});

export const PolicyCoverage = z.object({
  bi: limitPair.optional(),
  um: limitPair.optional(),
  uim: limitPair.optional(),
  pd: numberText.optional(),
  umpd: numberText.optional(),
  med: perPerson.optional(),
});

export const VehicleCoverage = z.object({
  coll: deductible.optional(),
  comp: deductible.optional(),
  rent: rentalLimit.optional(),
  tow: z.boolean().optional(),
  loan_payoff: z.boolean().optional(),
  full_glass: z.boolean().optional(),
  acpe: nonNegativeInt.optional(),
  umpd: numberText.optional(),
});

export const Coverage = z.object({
  policy_coverage: PolicyCoverage.optional(),
  /** One entry per vehicle, in the order of `application.vehicles`. */
  vehicle_coverage: z.array(VehicleCoverage).optional(),
});

export const Application = z
  .object({
    drivers: z.array(Driver).min(1, { error: 'expected at least one driver' }),
    vehicles: z.array(Vehicle).min(1, { error: 'expected at least one vehicle' }),
    coverage: Coverage.optional(),
    /** Seen in the public reference; its members are not published. */
    ubi: z.looseObject({}).optional(),
    effective_date: isoDate.optional(),
  })
  .superRefine((app, ctx) => {
    const perVehicle = app.coverage?.vehicle_coverage;
    if (perVehicle !== undefined && perVehicle.length !== app.vehicles.length) {
      ctx.addIssue({
        code: 'custom',
        path: ['coverage', 'vehicle_coverage'],
        message: `expected one entry per vehicle, got ${perVehicle.length} for ${app.vehicles.length} vehicles`,
        input: perVehicle,
      });
    }
  });

export const Tracking = z.object({
  click_id: z.string().min(1).optional(),
  channel_lead_id: z.string().min(1).optional(),
  universal_lead_id: uuidLike.optional(),
  traffic_source: z.string().optional(),
  traffic_medium: z.string().optional(),
  campaign_id: z.string().optional(),
  campaign_name: z.string().optional(),
  creative_id: z.string().optional(),
  source_id: z.string().optional(),
  submission_url: httpUrl.optional(),
  consumer_source_ip: ipAddress.optional(),
  user_agent: z.string().optional(),
});

export const Pricing = z.object({
  lead_price: z.number().nonnegative().optional(),
  bid_price: z.number().nonnegative().optional(),
  currency: z.string().regex(/^[A-Z]{3}$/, { error: 'expected a 3-letter currency code' }).optional(),
  pricing_model: lowerWord.optional(),
  pricing_source: z.string().optional(),
});

export const Compliance = z.object({
  tcpa_consent: z.boolean().optional(),
  consent_timestamp: isoUtcTimestamp.optional(),
  consent_source: z.string().optional(),
  consent_language: z.string().optional(),
  privacy_policy_url: httpUrl.optional(),
});

/** The body of `POST /partner/v2/policy/quote` (and, without `channel.agent_id`, of `/lead`). */
export const QuoteRequest = z.object({
  channel: Channel,
  application: Application,
  tracking: Tracking.optional(),
  pricing: Pricing.optional(),
  compliance: Compliance.optional(),
});
export type QuoteRequest = z.infer<typeof QuoteRequest>;
export type Driver = z.infer<typeof Driver>;
export type Vehicle = z.infer<typeof Vehicle>;

// ---------------------------------------------------------------------------------------------
// Responses of quote and lead (public reference)

export const InputIssue = z.looseObject({
  path: z.string(),
  severity: z.string(),
  type: z.string(),
  message: z.string(),
  original_value: z.string().optional(),
  resolved_value: z.string().optional(),
});
export type InputIssue = z.infer<typeof InputIssue>;

export const PremiumSummary = z.looseObject({
  total_premium: z.number(),
  initial_premium: z.number().optional(),
  monthly_premium: z.number().optional(),
  paid_in_full_premium: z.number().optional(),
  policy_term: z.number().optional(),
});

export const LeadSuccessResponse = z.looseObject({
  status: z.string(),
  message: z.string().optional(),
  transaction_id: z.string().optional(),
  ubi: z.looseObject({}).optional(),
  bridge_urls: z.looseObject({}).optional(),
  input_issues: z.array(InputIssue).optional(),
});
export type LeadSuccessResponse = z.infer<typeof LeadSuccessResponse>;

export const QuoteSuccessResponse = LeadSuccessResponse.extend({
  quote: z
    .looseObject({
      quote_number: z.string().optional(),
      premium_summary: PremiumSummary.optional(),
    })
    .optional(),
});
export type QuoteSuccessResponse = z.infer<typeof QuoteSuccessResponse>;

/** 400 and 500 of quote/lead (inferred shape: treat any body as possibly different). */
export const ErrorResponse = z.looseObject({
  status: z.string().optional(),
  message: z.string().optional(),
  error_code: z.string().optional(),
});
export type ErrorResponse = z.infer<typeof ErrorResponse>;

// ---------------------------------------------------------------------------------------------
// Open sets of enumerated words (listed in known-words.ts): a known value passes, an unknown one is a warning.

export { KNOWN_VALUES } from './known-words.js';

export interface EnumWarning {
  /** Concrete path, e.g. `application.drivers[1].gender`. */
  path: string;
  value: string;
  message: string;
}

/** Lists the enumerated words in `request` that are outside the known sets. Never throws. */
export function findUnknownEnumValues(request: unknown): EnumWarning[] {
  const warnings: EnumWarning[] = [];
  for (const [pattern, known] of Object.entries(KNOWN_VALUES)) {
    for (const { path, value } of valuesAt(request, pattern)) {
      if (typeof value === 'string' && !known.includes(value)) {
        warnings.push({ path, value, message: `unknown value "${value}" (known: ${known.join(', ')})` });
      }
    }
  }
  return warnings;
}

function valuesAt(root: unknown, pattern: string): { path: string; value: unknown }[] {
  let found: { path: string; value: unknown }[] = [{ path: '', value: root }];
  for (const segment of pattern.split('.')) {
    const isArray = segment.endsWith('[]');
    const key = isArray ? segment.slice(0, -2) : segment;
    const next: { path: string; value: unknown }[] = [];
    for (const { path, value } of found) {
      if (value === null || typeof value !== 'object') continue;
      const child = (value as Record<string, unknown>)[key];
      if (child === undefined) continue;
      const childPath = path === '' ? key : `${path}.${key}`;
      if (isArray) {
        if (Array.isArray(child)) child.forEach((item, i) => next.push({ path: `${childPath}[${i}]`, value: item }));
      } else {
        next.push({ path: childPath, value: child });
      }
    }
    found = next;
  }
  return found;
}

/** Formats a zod path as the request path users see: `application.drivers[1].dob`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

export interface RequestIssue {
  /** Request path, e.g. `application.drivers[1].dob`. */
  path: string;
  /** What was expected, e.g. `expected YYYY-MM-DD`. */
  message: string;
  /** The offending value when there was one. */
  received?: unknown;
}

/** Checks a request against {@link QuoteRequest}; returns its issues (empty when valid). */
export function validateQuoteRequest(request: unknown): RequestIssue[] {
  const result = QuoteRequest.safeParse(request, { reportInput: true });
  if (result.success) return [];
  return result.error.issues.map((issue) => {
    const out: RequestIssue = { path: formatPath(issue.path), message: describeIssue(issue) };
    if ('input' in issue && issue.input !== undefined) out.received = issue.input;
    return out;
  });
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type') {
    const got = 'input' in issue && issue.input === undefined ? 'nothing' : undefined;
    return got === undefined ? `expected ${issue.expected}` : `required ${issue.expected}, got ${got}`;
  }
  return issue.message;
}
