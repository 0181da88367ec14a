import { describe, expect, it } from 'vitest';
import { lookUpTarget, parseRequestPath } from '../../../src/mapping/_request-paths.js';
import { ENTITY_LISTS, matchName, TARGETS, wordsOf, type Entity } from '../../../src/mapping/draft/names.js';

const ALL: Entity[] = ['lead', 'driver', 'vehicle', 'vehicle_coverage', 'incident'];

describe('column names → request fields', () => {
  it.each([
    // [column name, entities, expected path]
    ['FName', ['driver'], 'name.first_name'],
    ['first_name', ['driver'], 'name.first_name'],
    ['DOB', ['driver'], 'dob'],
    ['BirthDate', ['driver'], 'dob'],
    ['Sex', ['driver'], 'gender'],
    ['Zip', ['driver'], 'address.zip'],
    ['DL', ['driver'], 'driver_license.id'],
    ['DL_State', ['driver'], 'driver_license.state'],
    ['Yrs_Licensed', ['driver'], 'driver_license.years_licensed'],
    ['license.state', ['driver'], 'driver_license.state'],
    ['contact.address.line1', ['lead', 'driver'], 'address.address_line_1'],
    ['contact.residence.type', ['lead', 'driver'], 'residence.type'],
    ['prior_insurance.bi', ['lead', 'driver'], 'prior_insurance.bi_coverage'],
    ['policy.bi_limits', ['lead', 'driver'], 'application.coverage.policy_coverage.bi'],
    ['AgentEmail', ['lead', 'driver'], 'agent.email'],
    ['Email', ['lead', 'driver'], 'contact_info.email'],
    ['ClickRef', ['lead'], 'tracking.click_id'],
    ['Lead_No', ['lead'], 'tracking.channel_lead_id'],
    ['created_at', ['lead'], 'compliance.consent_timestamp'],
    ['TCPA', ['lead'], 'compliance.tcpa_consent'],
    ['MedPay', ['lead'], 'application.coverage.policy_coverage.med'],
    ['VIN', ['vehicle', 'vehicle_coverage'], 'vin'],
    ['Coll_Ded', ['vehicle', 'vehicle_coverage'], 'coll'],
    ['Towing', ['vehicle', 'vehicle_coverage'], 'tow'],
    ['Miles', ['vehicle', 'vehicle_coverage'], 'usage.annual_mileage'],
    ['Type', ['incident'], 'code'],
    ['AtFault', ['incident'], 'is_at_fault'],
    // Short forms, and a warehouse's kind word at the end.
    ['lic_st', ['driver'], 'driver_license.state'],
    ['occ_cd', ['driver'], 'occupation.code'],
    ['eff_dt', ['lead'], 'application.effective_date'],
    ['LAST_NM', ['driver'], 'name.last_name'],
    ['CITY_NM', ['driver'], 'address.city'],
    ['TCPA_IND', ['lead'], 'compliance.tcpa_consent'],
    ['BIRTH_DT', ['driver'], 'dob'],
    // A vendor's own words.
    ['name.given', ['driver'], 'name.first_name'],
    ['name.family', ['driver'], 'name.last_name'],
    ['residence.locality', ['driver'], 'address.city'],
  ] as const)('%s → %s', (name, entities, path) => {
    expect(matchName(name, entities)[0]?.target.path).toBe(path);
  });

  it('whole names are sure, names found inside longer ones less so, unknown names not at all', () => {
    expect(matchName('first_name', ['driver'])[0]?.confidence).toBeGreaterThanOrEqual(0.9);
    const partial = matchName('PrimaryPhoneNumberHome', ['driver'])[0];
    expect(partial?.target.path).toBe('contact_info.phone');
    expect(partial?.confidence).toBeLessThan(0.9);
    expect(matchName('Lead_Score', ALL).filter((m) => m.confidence >= 0.5).map((m) => m.target.path)).not.toContain('tracking.channel_lead_id');
    expect(matchName('Notes', ALL)).toEqual([]);
    expect(matchName('x'.repeat(10_000), ALL)).toEqual([]);
  });

  it('a field of a licence or of a prior policy is never read as the consumer\'s', () => {
    const address = (name: string): number => matchName(name, ['driver']).find((m) => m.target.path === 'address.state')?.confidence ?? 0;
    expect(matchName('licence.state', ['driver'])[0]?.target.path).toBe('driver_license.state');
    expect(address('licence.state')).toBeLessThan(0.5);
    expect(address('dl_state')).toBeLessThan(0.5);
    expect(address('residence.region')).toBeGreaterThan(0.8);
    expect(address('mailing_state')).toBeGreaterThan(0.6);
  });

  it('words of a name: camel case, separators and numbers', () => {
    expect(wordsOf('D1_FName')).toEqual(['d', '1', 'f', 'name']);
    expect(wordsOf('dateOfBirth')).toEqual(['date', 'of', 'birth']);
    expect(wordsOf('Driver 2 First-Name')).toEqual(['driver', '2', 'first', 'name']);
    expect(wordsOf('contact.address.line1')).toEqual(['contact', 'address', 'line', '1']);
  });

  it('every target is a QuoteRequest path (or the agent e-mail)', () => {
    for (const target of TARGETS) {
      if (target.path === 'agent.email') continue;
      const full = target.entity === 'lead' ? target.path
        : target.entity === 'incident' ? `${ENTITY_LISTS.driver}[0].${ENTITY_LISTS.incident}[0].${target.path}`
          : `${ENTITY_LISTS[target.entity]}[0].${target.path}`;
      expect(lookUpTarget(parseRequestPath(full)), full).toMatchObject({ ok: true });
    }
  });
});
