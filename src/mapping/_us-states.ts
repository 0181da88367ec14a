/**
 * US states, DC and the territories by name, for `type: state` (docs/mapping.md, "Conversions"): a
 * lead export writes "Texas" or "NEW YORK" where the QuoteRequest wants the 2-letter code "TX".
 */
const CODE_BY_NAME: Readonly<Record<string, string>> = {
  alabama: 'AL', alaska: 'AK', arizona: 'AZ', arkansas: 'AR', california: 'CA', colorado: 'CO', connecticut: 'CT',
  delaware: 'DE', florida: 'FL', georgia: 'GA', hawaii: 'HI', idaho: 'ID', illinois: 'IL', indiana: 'IN', iowa: 'IA',
  kansas: 'KS', kentucky: 'KY', louisiana: 'LA', maine: 'ME', maryland: 'MD', massachusetts: 'MA', michigan: 'MI',
  minnesota: 'MN', mississippi: 'MS', missouri: 'MO', montana: 'MT', nebraska: 'NE', nevada: 'NV', 'new hampshire': 'NH',
  'new jersey': 'NJ', 'new mexico': 'NM', 'new york': 'NY', 'north carolina': 'NC', 'north dakota': 'ND', ohio: 'OH',
  oklahoma: 'OK', oregon: 'OR', pennsylvania: 'PA', 'rhode island': 'RI', 'south carolina': 'SC', 'south dakota': 'SD',
  tennessee: 'TN', texas: 'TX', utah: 'UT', vermont: 'VT', virginia: 'VA', washington: 'WA', 'west virginia': 'WV',
  wisconsin: 'WI', wyoming: 'WY',
  'district of columbia': 'DC', 'washington dc': 'DC', 'washington d.c.': 'DC',
  'puerto rico': 'PR', guam: 'GU', 'u.s. virgin islands': 'VI', 'us virgin islands': 'VI', 'virgin islands': 'VI',
  'american samoa': 'AS', 'northern mariana islands': 'MP',
};

const CODES: ReadonlySet<string> = new Set(Object.values(CODE_BY_NAME));

/** The 2-letter code of a state written as its code or its name, in any case; undefined when it is neither. */
export function usStateCode(text: string): string | undefined {
  const key = text.trim().replace(/\s+/g, ' ').toLowerCase();
  if (key.length === 2) {
    const code = key.toUpperCase();
    return CODES.has(code) ? code : undefined;
  }
  return Object.hasOwn(CODE_BY_NAME, key) ? CODE_BY_NAME[key] : undefined;
}

/** True when `text` is a state's name (not its code): what `init` looks for to draft `type: state`. */
export function isUsStateName(text: string): boolean {
  const key = text.trim().replace(/\s+/g, ' ').toLowerCase();
  return key.length > 2 && Object.hasOwn(CODE_BY_NAME, key);
}
