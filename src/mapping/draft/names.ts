/**
 * Column names → QuoteRequest paths: the names exports use for each request field (synonyms),
 * and a matcher that scores a column name against them. Pure; the table is checked against the
 * QuoteRequest by a test, so a path here cannot drift from the schema.
 */

/** Whose field it is: the lead's (top-level), or one element of a list. */
export type Entity = 'lead' | 'driver' | 'vehicle' | 'vehicle_coverage' | 'incident';

/** How a value is written in the request, beyond its JSON type: decides the draft's conversion. */
export type Semantic =
  | 'text' | 'date' | 'timestamp' | 'phone' | 'state' | 'zip' | 'email' | 'upper' | 'digits' | 'ded' | 'per_person'
  | 'integer' | 'decimal' | 'boolean' | 'words'
  /** Numeric text such as an occupation code (`010`): a description in words does not fit it. */
  | 'code'
  /** Words describing something (an occupation's name): a code of digits fits it less. */
  | 'description'
  /** A limit in thousands (`50`, the partner's), or in dollars (`$50,000`) for `type: limit`. */
  | 'limit'
  /** A pair of limits (`100/300`, or `$100,000/$300,000`). */
  | 'limit_pair'
  /** An amount of money: a number, or `$1,234.50` for `type: money`. */
  | 'money';

export interface Target {
  entity: Entity;
  /** Relative to one element (`dob`), or the whole path for the lead (`tracking.click_id`); `agent.email` for the agent. */
  path: string;
  semantic: Semantic;
  /** Names exports use for it, written with `_` between words (compared without case or separators). */
  names: readonly string[];
}

const t = (entity: Entity, path: string, semantic: Semantic, ...names: string[]): Target => ({ entity, path, semantic, names });

/** Where each entity's elements go in the request. */
export const ENTITY_LISTS: Readonly<Record<Exclude<Entity, 'lead'>, string>> = {
  driver: 'application.drivers',
  vehicle: 'application.vehicles',
  vehicle_coverage: 'application.coverage.vehicle_coverage',
  incident: 'incident_history',
};

export const TARGETS: readonly Target[] = [
  // The lead
  t('lead', 'agent.email', 'email', 'agent_email', 'agent', 'agent_mail', 'producer_email', 'producer', 'rep_email', 'agent_email_address'),
  t('lead', 'channel.channel_id', 'text', 'channel_id'),
  t('lead', 'channel.integration_type', 'words', 'integration_type'),
  t('lead', 'tracking.click_id', 'text', 'click_id', 'clickid', 'click', 'clk_id', 'click_ref', 'click_reference', 'click_token', 'click_key'),
  t('lead', 'tracking.channel_lead_id', 'text', 'lead_id', 'lead', 'lead_number', 'lead_no', 'lead_ref', 'lead_reference', 'reference', 'ref_id', 'id'),
  t('lead', 'tracking.universal_lead_id', 'text', 'universal_lead_id', 'universal_leadid', 'jornaya_id', 'leadid_token', 'jornaya'),
  t('lead', 'tracking.traffic_source', 'text', 'traffic_source', 'source', 'utm_source', 'lead_source'),
  t('lead', 'tracking.traffic_medium', 'text', 'traffic_medium', 'medium', 'utm_medium'),
  t('lead', 'tracking.campaign_id', 'text', 'campaign_id', 'campaign', 'utm_campaign', 'camp_id', 'cmp_id', 'cmp'),
  t('lead', 'tracking.campaign_name', 'text', 'campaign_name', 'camp_name'),
  t('lead', 'tracking.creative_id', 'text', 'creative_id', 'creative', 'ad_id'),
  t('lead', 'tracking.source_id', 'text', 'source_id', 'sub_id', 'subid', 'pub_id', 'publisher_id', 'affiliate_id'),
  t('lead', 'tracking.submission_url', 'text', 'submission_url', 'landing_url', 'landing_page', 'page_url', 'url', 'source_url', 'form_url'),
  t('lead', 'tracking.consumer_source_ip', 'text', 'consumer_source_ip', 'ip', 'ip_address', 'ip_addr', 'consumer_ip', 'consent_ip', 'source_ip', 'client_ip', 'user_ip'),
  t('lead', 'tracking.user_agent', 'text', 'user_agent', 'ua', 'browser', 'useragent'),
  t('lead', 'pricing.lead_price', 'money', 'lead_price', 'price', 'cost', 'lead_cost', 'payout', 'billing_amount', 'lead_amount', 'charge', 'amount'),
  t('lead', 'pricing.bid_price', 'money', 'bid_price', 'bid'),
  t('lead', 'pricing.currency', 'upper', 'currency', 'currency_code'),
  t('lead', 'pricing.pricing_model', 'words', 'pricing_model'),
  t('lead', 'pricing.pricing_source', 'text', 'pricing_source'),
  t('lead', 'compliance.tcpa_consent', 'boolean', 'tcpa_consent', 'tcpa', 'consent', 'tcpa_opt_in', 'opt_in', 'optin', 'consent_given', 'tcpa_flag'),
  t('lead', 'compliance.consent_timestamp', 'timestamp', 'consent_timestamp', 'consent_time', 'consent_date', 'consent_at', 'consented_at', 'created_at', 'created', 'created_on',
    'date_created', 'timestamp', 'submitted_at', 'submitted', 'submit_time', 'date_submitted', 'lead_date', 'lead_time', 'tcpa_timestamp', 'received_at', 'received',
    'date_received', 'captured_at'),
  t('lead', 'compliance.consent_source', 'text', 'consent_source', 'consent_method', 'consent_type', 'consent_channel', 'opt_in_method', 'tcpa_method'),
  t('lead', 'compliance.consent_language', 'text', 'consent_language', 'consent_text', 'tcpa_text', 'tcpa_language'),
  t('lead', 'compliance.privacy_policy_url', 'text', 'privacy_policy_url', 'privacy_url', 'privacy_policy'),
  t('lead', 'application.effective_date', 'date', 'effective_date', 'eff_date', 'effective', 'policy_start', 'policy_start_date', 'start_date',
    'desired_start', 'coverage_start', 'policy_effective_date'),
  t('lead', 'application.coverage.policy_coverage.bi', 'limit_pair', 'bi', 'bi_limits', 'bi_limit', 'bodily_injury', 'bodily_injury_limits', 'bodily_injury_limit', 'policy_bi'),
  t('lead', 'application.coverage.policy_coverage.pd', 'limit', 'pd', 'pd_limit', 'pd_limits', 'property_damage', 'property_damage_limit', 'property_damage_limits', 'policy_pd'),
  t('lead', 'application.coverage.policy_coverage.um', 'limit_pair', 'um', 'um_limits', 'um_limit', 'uninsured_motorist', 'uninsured_motorist_limits', 'uninsured_motorist_limit'),
  t('lead', 'application.coverage.policy_coverage.uim', 'limit_pair', 'uim', 'uim_limits', 'uim_limit', 'underinsured_motorist', 'underinsured_motorist_limits', 'underinsured_motorist_limit'),
  t('lead', 'application.coverage.policy_coverage.umpd', 'limit', 'policy_umpd', 'umpd_limit'),
  t('lead', 'application.coverage.policy_coverage.med', 'per_person', 'med', 'med_pay', 'medpay', 'medical_payments', 'medical', 'med_pay_limit', 'medical_payments_limit'),

  // A driver
  t('driver', 'name.first_name', 'text', 'first_name', 'fname', 'first', 'firstname', 'given_name', 'forename', 'f_name', 'given', 'givenname'),
  t('driver', 'name.last_name', 'text', 'last_name', 'lname', 'last', 'lastname', 'surname', 'family_name', 'l_name', 'family', 'familyname'),
  t('driver', 'name.middle_name', 'text', 'middle_name', 'mname', 'middle', 'middle_initial', 'mi'),
  t('driver', 'name.suffix', 'text', 'suffix', 'name_suffix', 'sfx'),
  t('driver', 'dob', 'date', 'dob', 'birth_date', 'date_of_birth', 'birthdate', 'birthday', 'bday', 'born', 'birth_dt', 'd_o_b', 'birth'),
  t('driver', 'gender', 'words', 'gender', 'sex'),
  t('driver', 'marital_status', 'words', 'marital_status', 'marital', 'mar_status', 'marital_stat', 'married'),
  t('driver', 'relation_to_pni', 'words', 'relation_to_pni', 'relation', 'relationship', 'rel', 'relation_to_applicant', 'relationship_to_insured'),
  t('driver', 'contact_info.phone', 'phone', 'phone', 'phone_number', 'phone_no', 'tel', 'telephone', 'mobile', 'cell', 'cell_phone', 'home_phone', 'ph', 'contact_phone'),
  t('driver', 'contact_info.email', 'email', 'email', 'e_mail', 'email_address', 'mail', 'contact_email'),
  t('driver', 'education', 'words', 'education', 'edu', 'education_level', 'degree', 'educ'),
  t('driver', 'occupation.code', 'code', 'occupation_code', 'occ_code', 'occupation', 'occ', 'job_code'),
  t('driver', 'occupation.description', 'description', 'occupation_description', 'occ_desc', 'job_title', 'job', 'occupation_name', 'occupation', 'profession'),
  t('driver', 'driver_license.id', 'text', 'license_number', 'license_no', 'license_id', 'licence_number', 'dl', 'dl_number', 'dl_num', 'dl_no', 'dln'),
  t('driver', 'driver_license.state', 'state', 'license_state', 'licence_state', 'dl_state', 'lic_state', 'license_st'),
  t('driver', 'driver_license.years_licensed', 'text', 'years_licensed', 'yrs_licensed', 'license_years', 'years_driving', 'yrs_lic', 'lic_years', 'licensed_years', 'years_held'),
  t('driver', 'driver_license.type', 'text', 'license_type', 'dl_type', 'lic_type'),
  t('driver', 'driver_license.status', 'words', 'license_status', 'dl_status', 'lic_status', 'licence_status'),
  t('driver', 'student_profile.is_good_student', 'boolean', 'is_good_student', 'good_student', 'good_stud', 'honor_student', 'good_grades'),
  t('driver', 'student_profile.is_distant_student', 'boolean', 'is_distant_student', 'distant_student', 'away_at_school', 'student_away'),
  t('driver', 'credit_rating', 'words', 'credit_rating', 'credit', 'credit_score', 'credit_tier', 'credit_band'),
  t('driver', 'had_driver_training', 'boolean', 'had_driver_training', 'driver_training', 'drivers_ed', 'driver_ed', 'defensive_driving'),
  t('driver', 'address.address_line_1', 'text', 'address_line_1', 'address_1', 'address1', 'address', 'addr', 'addr1', 'addr_1', 'street', 'street_address', 'line1', 'address_line1'),
  t('driver', 'address.address_line_2', 'text', 'address_line_2', 'address_2', 'address2', 'addr2', 'addr_2', 'apt', 'unit', 'suite', 'line2', 'address_line2'),
  t('driver', 'address.city', 'text', 'city', 'town', 'locality'),
  t('driver', 'address.state', 'state', 'state', 'st', 'state_code', 'province', 'region'),
  t('driver', 'address.zip', 'zip', 'zip', 'zip_code', 'zipcode', 'postal_code', 'postcode', 'zip5', 'postal'),
  t('driver', 'address.country', 'text', 'country', 'country_code'),
  t('driver', 'residence.type', 'words', 'residence_type', 'residence', 'home_type', 'dwelling', 'dwelling_type', 'home_ownership', 'own_rent', 'housing', 'home_owner'),
  t('driver', 'residence.length_in_months', 'integer', 'residence_months', 'months_at_residence', 'months_at_address', 'residence_length', 'time_at_address_months'),
  t('driver', 'prior_insurance.carrier', 'text', 'prior_carrier', 'current_carrier', 'carrier', 'insurer', 'current_insurer', 'prior_insurer', 'insurance_company'),
  t('driver', 'prior_insurance.bi_coverage', 'limit_pair', 'prior_bi', 'prior_insurance_bi', 'current_bi', 'prior_bi_limits', 'prior_limits', 'current_limits', 'current_bi_limits'),
  t('driver', 'prior_insurance.effective_date', 'date', 'prior_effective', 'prior_effective_date', 'prior_start', 'prior_insurance_effective', 'current_policy_start'),
  t('driver', 'prior_insurance.expiration_date', 'date', 'prior_expires', 'prior_expiration', 'prior_expiration_date', 'prior_exp', 'prior_insurance_expires',
    'current_policy_expires', 'policy_expires', 'policy_expiration', 'expiration_date', 'expires', 'prior_end', 'current_expiration', 'x_date', 'xdate'),

  // A vehicle and its coverage
  t('vehicle', 'vin', 'upper', 'vin', 'vin_number', 'vehicle_id_number', 'vin_no'),
  t('vehicle', 'make', 'text', 'make', 'manufacturer', 'brand', 'vehicle_make'),
  t('vehicle', 'model', 'text', 'model', 'vehicle_model'),
  t('vehicle', 'year', 'integer', 'year', 'model_year', 'yr', 'vehicle_year', 'veh_year'),
  t('vehicle', 'usage.primary_use', 'words', 'primary_use', 'use', 'usage', 'vehicle_use', 'use_type'),
  t('vehicle', 'usage.annual_mileage', 'integer', 'annual_mileage', 'annual_miles', 'miles', 'mileage', 'miles_per_year', 'yearly_miles', 'annual_mi', 'ann_miles'),
  t('vehicle', 'ownership.type', 'words', 'ownership', 'ownership_type', 'owned', 'own_lease', 'own', 'title', 'owner_type'),
  t('vehicle', 'ownership.length_in_months', 'integer', 'months_owned', 'ownership_months', 'ownership_length'),
  t('vehicle', 'is_ride_sharing', 'boolean', 'is_ride_sharing', 'ride_sharing', 'rideshare', 'ride_share', 'tnc', 'uber'),
  t('vehicle_coverage', 'coll', 'ded', 'coll', 'collision', 'coll_ded', 'collision_deductible', 'coll_deductible', 'collision_ded'),
  t('vehicle_coverage', 'comp', 'ded', 'comp', 'comprehensive', 'comp_ded', 'comprehensive_deductible', 'comp_deductible', 'comprehensive_ded'),
  t('vehicle_coverage', 'rent', 'text', 'rent', 'rental', 'rental_reimbursement', 'rental_limit'),
  t('vehicle_coverage', 'tow', 'boolean', 'tow', 'towing', 'roadside', 'roadside_assistance'),
  t('vehicle_coverage', 'loan_payoff', 'boolean', 'loan_payoff', 'gap', 'gap_coverage'),
  t('vehicle_coverage', 'full_glass', 'boolean', 'full_glass', 'glass'),
  t('vehicle_coverage', 'acpe', 'integer', 'acpe', 'custom_equipment'),
  t('vehicle_coverage', 'umpd', 'limit', 'umpd'),

  // An incident of a driver
  t('incident', 'code', 'upper', 'code', 'type', 'kind', 'incident_code', 'incident_type', 'violation_code', 'violation', 'inc_code', 'inc_type'),
  t('incident', 'incident_date', 'date', 'incident_date', 'date', 'inc_date', 'occurred', 'occurred_on', 'violation_date', 'dt', 'on', 'when', 'happened'),
  t('incident', 'is_at_fault', 'boolean', 'is_at_fault', 'at_fault', 'fault', 'atfault', 'at_fault_flag'),
];

/** The words of a name: `D1_FName` → d, 1, f, name; `dateOfBirth` → date, of, birth. */
export function wordsOf(name: string): string[] {
  return name
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .replace(/([A-Za-z])(\d)/g, '$1 $2')
    .replace(/(\d)([A-Za-z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word !== '');
}

/** A name compared without case or separators: `Birth_Date`, `birthDate` → `birthdate`. */
function squash(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, '');
}

export interface NameMatch {
  target: Target;
  /** 0 to 1: 0.95 for a whole-name synonym, less when words had to be dropped or only part matched. */
  confidence: number;
  /** What matched, for the draft's comment. */
  how: string;
}

// Names squashed once: target index → its squashed names, with the whole path's (`driverlicensetype`).
// Not the path's last word alone: `type`, `code`, `status` would match anything.
const SQUASHED: readonly (readonly string[])[] = TARGETS.map((target) => {
  const names = new Set(target.names.map(squash));
  names.add(squash(target.path));
  return [...names].filter((n) => n !== '');
});

/** Short forms exports use for a word, read as the word: `lic_st` is license state, `viol1_dt` a violation's date. */
const ABBREVIATIONS: Readonly<Record<string, string>> = {
  lic: 'license', licence: 'license', st: 'state', dt: 'date', cd: 'code', no: 'number', num: 'number', nbr: 'number',
  occ: 'occupation', res: 'residence', eff: 'effective', viol: 'violation', yr: 'year', yrs: 'years', addr: 'address',
  amt: 'amount', ded: 'deductible', tel: 'phone', ts: 'time',
};

/**
 * Words a data warehouse puts after a name to say its kind (`LAST_NM`, `STATE_CD`, `BIRTH_DT`,
 * `TCPA_IND`): a name is read without one too.
 */
const KIND_SUFFIXES = new Set(['nm', 'cd', 'cde', 'nbr', 'num', 'no', 'amt', 'dt', 'ts', 'ind', 'flg', 'flag', 'qty', 'txt', 'val']);

/**
 * Words that say whose value a name holds (`license_state` is the licence's state): a name read
 * only after dropping one of them is not the value of a field outside that owner (the consumer's
 * address state is not a licence's).
 */
const OWNERS: Readonly<Record<string, (target: Target) => boolean>> = {
  license: (t) => t.path.startsWith('driver_license.'),
  licence: (t) => t.path.startsWith('driver_license.'),
  lic: (t) => t.path.startsWith('driver_license.'),
  dl: (t) => t.path.startsWith('driver_license.'),
  prior: (t) => t.path.startsWith('prior_insurance.'),
  previous: (t) => t.path.startsWith('prior_insurance.'),
  current: (t) => t.path.startsWith('prior_insurance.'),
  garage: (t) => t.entity === 'vehicle',
  vehicle: (t) => t.entity === 'vehicle' || t.entity === 'vehicle_coverage',
  employer: (t) => t.path.startsWith('occupation.'),
  agent: (t) => t.path === 'agent.email',
  producer: (t) => t.path === 'agent.email',
};

/** A match of `words` (the whole name, or its last words) against a target's known names. */
function matchWords(words: readonly string[], names: readonly string[], boundaries: ReadonlyMap<number, number>, target: Target): NameMatch | undefined {
  for (let dropped = 0; dropped < words.length; dropped += 1) {
    const rest = words.slice(dropped).join('');
    if (rest.length < 2 || /^\d+$/.test(rest)) break;
    if (names.includes(rest)) {
      const segments = boundaries.get(dropped);
      let confidence = dropped === 0 ? 0.95 : segments !== undefined ? 0.93 - 0.02 * segments : Math.max(0.6, 0.85 - 0.1 * (dropped - 1));
      const owner = words.slice(0, dropped).find((word) => OWNERS[word] !== undefined);
      if (owner !== undefined && OWNERS[owner]?.(target) !== true) confidence *= 0.5;
      return { target, confidence, how: dropped === 0 ? 'name' : `"${words.slice(dropped).join('_')}" in the name` };
    }
  }
  const whole = words.join('');
  const part = names.filter((n) => n.length >= 5 && whole.includes(n)).sort((a, b) => b.length - a.length)[0];
  if (part !== undefined) return { target, confidence: 0.5 + Math.min(0.2, part.length / whole.length / 5), how: `"${part}" in the name` };
  return undefined;
}

/** Longest names compared at all (a header can hold a 10 MB name). */
const MAX_NAME = 200;

/**
 * The request fields `name` may be, best first, among targets of `entities`. Exact: the whole
 * name, or the name without its first words (`contact.address.zip` → `zip`), is a known name;
 * partial: the name contains a known name of 5 letters or more.
 */
export function matchName(name: string, entities: readonly Entity[]): NameMatch[] {
  if (name.length > MAX_NAME) return [];
  const words = wordsOf(name);
  // Dropping whole segments of a path (`contact.address.` of `contact.address.city`) costs little: they name objects, not the value.
  const boundaries = new Map<number, number>();
  let count = 0;
  name.split('.').slice(0, -1).forEach((segment, i) => {
    count += wordsOf(segment).length;
    boundaries.set(count, i + 1);
  });
  // The same words with their short forms written out (`lic_st` → license state), or without a
  // warehouse's kind word at the end (`LAST_NM` → last), a little less sure.
  const expanded = words.map((word) => ABBREVIATIONS[word] ?? word);
  const readings = [{ words, cost: 0 }];
  if (expanded.some((word, i) => word !== words[i])) readings.push({ words: expanded, cost: 0.02 });
  if (words.length > 1 && KIND_SUFFIXES.has(words[words.length - 1] ?? '')) readings.push({ words: words.slice(0, -1), cost: 0.03 });
  const matches: NameMatch[] = [];
  TARGETS.forEach((target, i) => {
    if (!entities.includes(target.entity)) return;
    const names = SQUASHED[i] ?? [];
    let best: NameMatch | undefined;
    for (const reading of readings) {
      const found = matchWords(reading.words, names, boundaries, target);
      if (found !== undefined && (best === undefined || found.confidence - reading.cost > best.confidence)) {
        best = { ...found, confidence: found.confidence - reading.cost };
      }
    }
    if (best !== undefined) matches.push(best);
  });
  return matches.sort((a, b) => b.confidence - a.confidence);
}
