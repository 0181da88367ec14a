/**
 * The partner's known words for each enumerated field of the QuoteRequest, in one place. The
 * partner publishes no allowed-value lists (public-reference.md: "keep them open: a known set that
 * warns, not one that rejects"): a word outside its list is sent, with a warning. Each word lists
 * the codes exports commonly use for it, which `quote-batch init` reads to propose value tables.
 * docs/mapping.md shows this table (test/mapping/known-words-docs.test.ts keeps the two equal and,
 * with UPDATE_DOCS=1, rewrites it).
 */

export interface KnownWord {
  /** The word the partner expects, e.g. `own_home`. */
  readonly word: string;
  /** Codes and spellings seen in lead exports for it (matched without regard to case), e.g. `OWN`. */
  readonly codes: readonly string[];
}

const w = (word: string, ...codes: string[]): KnownWord => ({ word, codes });

/** Known words per request path (`[]` stands for any element of a list). */
export const KNOWN_WORDS: Readonly<Record<string, readonly KnownWord[]>> = {
  'channel.integration_type': [w('direct'), w('leadcloud'), w('beacon')],
  'application.drivers[].gender': [w('male', 'M', 'man'), w('female', 'F', 'woman'), w('non_binary', 'NB', 'X', 'nonbinary'), w('unknown', 'U')],
  'application.drivers[].marital_status': [
    w('single', 'S', 'never married'), w('married', 'M'), w('divorced', 'D'), w('widowed', 'W', 'widow', 'widower'),
    w('separated', 'SEP'), w('domestic_partner', 'P', 'DP', 'partner', 'domestic partner'),
  ],
  'application.drivers[].relation_to_pni': [
    w('self', 'S', 'insured', 'primary', 'PNI', 'applicant'), w('spouse', 'SP', 'husband', 'wife'), w('child', 'C', 'son', 'daughter'),
    w('parent', 'PAR', 'father', 'mother'), w('sibling', 'SIB', 'brother', 'sister'), w('domestic_partner', 'DP', 'partner'), w('other', 'O', 'OTH'),
  ],
  'application.drivers[].education': [
    w('no_diploma', 'ND', 'none', 'NHS', 'less than high school'), w('high_school', 'HS', 'GED', 'high school'),
    w('some_college', 'SC', 'some college'), w('associate', 'AA', 'AS', 'associates'), w('bachelor', 'BA', 'BS', 'bachelors'),
    w('master', 'MA', 'MS', 'MBA', 'masters'), w('doctorate', 'DR', 'doctoral', 'JD', 'MD'), w('phd'), w('other', 'O', 'OTH'),
  ],
  'application.drivers[].residence.type': [
    w('own_home', 'OWN', 'H', 'home', 'house', 'homeowner', 'owner', 'own home'), w('own_condo', 'CONDO', 'CO', 'own condo', 'condo owner'),
    w('own_mobile_home', 'MOBILE', 'MH', 'mobile home'), w('rent', 'R', 'RENT', 'renter', 'renting', 'APT', 'apartment'),
    w('live_with_parents', 'PARENTS', 'LWP', 'with parents'), w('other', 'O', 'OTH'),
  ],
  'application.drivers[].credit_rating': [w('excellent', 'E', 'EX', 'EXC'), w('good', 'G', 'GD'), w('fair', 'F', 'FR', 'average'), w('poor', 'P', 'PR', 'bad'), w('unknown', 'U', 'UNK')],
  'application.drivers[].driver_license.status': [
    w('active', 'A', 'valid', 'V', 'ACT'), w('suspended', 'S', 'SUS', 'SUSP'), w('revoked', 'R', 'REV'), w('expired', 'E', 'X', 'EXP'),
    w('permit', 'P', 'learner', 'PER'), w('international', 'I', 'INTL', 'foreign'),
  ],
  'application.vehicles[].usage.primary_use': [
    w('commute', 'C', 'COM', 'work', 'commuting'), w('pleasure', 'P', 'PL', 'personal'), w('business', 'B', 'BUS'),
    w('farm', 'F', 'FRM'), w('commercial', 'CMRCL', 'CML', 'COMM'),
  ],
  'application.vehicles[].ownership.type': [w('owned', 'OWN', 'O', 'owner'), w('financed', 'FIN', 'F', 'loan'), w('leased', 'LSE', 'L', 'lease')],
  'pricing.pricing_model': [w('cpl'), w('cpc'), w('cpa'), w('cpq')],
};

/** The known words alone, per request path: an unknown one is a warning (see findUnknownEnumValues). */
export const KNOWN_VALUES: Readonly<Record<string, readonly string[]>> = Object.fromEntries(
  Object.entries(KNOWN_WORDS).map(([path, words]) => [path, words.map((entry) => entry.word)]),
);

/**
 * The known word for a code of an export (`OWN` → `own_home` for a residence type), or undefined.
 * A known word itself matches (any case); then a code; the comparison ignores case, spaces, `-`.
 */
export function findKnownWord(path: string, code: string): string | undefined {
  const words = KNOWN_WORDS[path];
  if (words === undefined) return undefined;
  const wanted = simplify(code);
  if (wanted === '') return undefined;
  return words.find((entry) => simplify(entry.word) === wanted)?.word
    ?? words.find((entry) => entry.codes.some((c) => simplify(c) === wanted))?.word;
}

function simplify(text: string): string {
  return text.toLowerCase().replace(/[\s_.-]+/g, '');
}

/** The Markdown table of docs/mapping.md ("Known words"), generated from {@link KNOWN_WORDS}. */
export function renderKnownWordsTable(): string {
  const lines = ['| request path | known words (and the codes `init` reads as them) |', '|---|---|'];
  for (const [path, words] of Object.entries(KNOWN_WORDS)) {
    const cells = words.map((entry) => `\`${entry.word}\`${entry.codes.length === 0 ? '' : ` (${entry.codes.join(', ')})`}`);
    lines.push(`| \`${path}\` | ${cells.join(' · ')} |`);
  }
  return `${lines.join('\n')}\n`;
}
