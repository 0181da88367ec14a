/**
 * Amounts as exports write them: money (`$1,234.50`, `1.234,50 €`, `USD 12`) into a number, and
 * coverage limits written in dollars (`100,000/300,000`, `$25,000`, `100K`) into the partner's
 * thousands (`100/300`, `25`). See docs/mapping.md, "Money and limits".
 */
import { fail, type Converter } from './_fail.js';
import { quoteValue } from './_text.js';

/** The character between whole units and cents: `.` (`1,234.50`, the default) or `,` (`1.234,50`). */
export type DecimalMark = '.' | ',';

/** A currency sign or code before or after the amount, with the spaces around it. */
const CURRENCY = /^(?:[$€£¥]|[A-Z]{3}(?![A-Za-z]))\s*|\s*(?:[$€£¥]|(?<![A-Za-z])[A-Z]{3})$/g;
interface AmountSyntax {
  /** The whole text of an amount (sign and currency removed): groups 1 integer part, 3 fraction. */
  body: RegExp;
  thousands: RegExp;
  example: string;
}

function syntaxFor(mark: DecimalMark): AmountSyntax {
  // Thousands are grouped by one separator used throughout (`1,234,567`, `1 234 567`, `1'234'567`).
  const groups = mark === '.' ? "[,'\\s\\u00a0\\u202f]" : "[.'\\s\\u00a0\\u202f]";
  const decimal = mark === '.' ? '\\.' : ',';
  return {
    body: new RegExp(`^(\\d{1,3}(?:(${groups})\\d{3})(?:\\2\\d{3})*|\\d+)?(?:${decimal}(\\d+))?$`),
    thousands: new RegExp(groups, 'g'),
    example: mark === '.' ? '$1,234.50' : '1.234,50 €',
  };
}

const SYNTAX: Readonly<Record<DecimalMark, AmountSyntax>> = { '.': syntaxFor('.'), ',': syntaxFor(',') };

/** An amount's number, or undefined when the text is not one. */
function readAmount(text: string, syntax: AmountSyntax): number | undefined {
  let rest = text.trim();
  let negative = false;
  if (rest.startsWith('(') && rest.endsWith(')')) {
    // Accountants write a negative amount in parentheses: (1,234.50).
    negative = true;
    rest = rest.slice(1, -1).trim();
  }
  if (rest.startsWith('-') || rest.startsWith('+')) {
    negative = negative || rest.startsWith('-');
    rest = rest.slice(1).trimStart();
  }
  rest = rest.replace(CURRENCY, '');
  if (rest.startsWith('-') && !negative) {
    // `$-5`: the sign after the currency sign.
    negative = true;
    rest = rest.slice(1);
  }
  const match = syntax.body.exec(rest);
  if (match === null || (match[1] === undefined && match[3] === undefined)) return undefined;
  const whole = (match[1] ?? '0').replace(syntax.thousands, '');
  const value = Number(`${whole}.${match[3] ?? '0'}`);
  if (!Number.isFinite(value)) return undefined;
  return negative ? -value : value;
}

/** `type: money`: an amount of money, its currency sign or code left out, into a JSON number. */
export function buildMoney(mark: DecimalMark = '.'): Converter {
  const syntax = SYNTAX[mark];
  return (text) => {
    const value = readAmount(text, syntax);
    return value === undefined ? fail(`expected an amount of money such as ${syntax.example}, got ${quoteValue(text)}`) : value;
  };
}

/** `100K`, `1.5M`: an amount with its unit of thousands or millions. */
const UNIT_SUFFIX = /^(.*?\d)\s*([kKmM])$/;

/**
 * One limit in thousands of dollars. `K` and `M` say the unit; otherwise an amount of 1,000 or more
 * is dollars (it must be whole thousands), and a smaller one is already thousands (`100/300`).
 */
function readLimit(text: string, syntax: AmountSyntax): number | string {
  const suffix = UNIT_SUFFIX.exec(text.trim());
  const amount = readAmount(suffix === null ? text : suffix[1] ?? '', syntax);
  if (amount === undefined || amount < 0) return 'expected a limit in dollars such as $25,000 or 100,000/300,000';
  let thousands: number;
  if (suffix !== null) thousands = /[mM]/.test(suffix[2] ?? '') ? amount * 1000 : amount;
  else thousands = amount >= 1000 ? amount / 1000 : amount;
  const rounded = Math.round(thousands);
  if (Math.abs(thousands - rounded) > 1e-9) return 'expected whole thousands of dollars';
  return rounded;
}

/**
 * `type: limit`: a limit, or a pair of limits separated by `/`, written in dollars (`$25,000`,
 * `100,000/300,000`, `100K/300K`), into the partner's text in thousands (`25`, `100/300`).
 */
export function buildLimit(mark: DecimalMark = '.'): Converter {
  const syntax = SYNTAX[mark];
  return (text) => {
    const parts = text.split('/');
    if (parts.length > 2) return fail(`expected a limit or a pair of limits (100,000/300,000), got ${quoteValue(text)}`);
    const out: number[] = [];
    for (const part of parts) {
      const value = readLimit(part, syntax);
      if (typeof value === 'string') return fail(`${value}, got ${quoteValue(text)}`);
      out.push(value);
    }
    return out.join('/');
  };
}
