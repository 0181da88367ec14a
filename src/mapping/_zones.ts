/**
 * Time zones: `UTC`, an offset (`-05:00`), a US abbreviation (`EST`) or an IANA name
 * (`America/Chicago`), as a function from a UTC instant to the zone's offset then (daylight saving
 * time applied). Used by timestamps (`_dates.ts`) for `zone:` and for a zone named in the text.
 */

/** Minutes east of UTC of `+02:00`, `-0500`, `+02` or `Z`. */
export function parseOffset(text: string): number {
  if (text === 'Z' || text === 'z') return 0;
  const sign = text.startsWith('-') ? -1 : 1;
  const digits = text.slice(1).replace(':', '');
  return sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4) || '0'));
}

/** Minutes east of UTC of `zone` at a UTC instant. */
export type ZoneOffset = (utcMillis: number) => number;

/** US abbreviations exports write after a time (`EST`): each is one fixed offset, so none is ambiguous. */
const ZONE_ABBREVIATIONS: ReadonlyMap<string, number> = new Map([
  ['UTC', 0], ['GMT', 0], ['Z', 0], ['EST', -300], ['EDT', -240], ['CST', -360], ['CDT', -300], ['MST', -420], ['MDT', -360],
  ['PST', -480], ['PDT', -420], ['AKST', -540], ['AKDT', -480], ['HST', -600],
]);

/** Resolves `UTC`, `+05:30`, a US abbreviation (`EST`) or an IANA name; throws an Error when unknown. */
export function compileZone(zone: string | undefined): ZoneOffset {
  if (zone === undefined) return () => 0;
  const fixed = ZONE_ABBREVIATIONS.get(zone.toUpperCase());
  if (fixed !== undefined) return () => fixed;
  if (/^[+-]\d{2}(?::?\d{2})?$/.test(zone)) {
    const offset = parseOffset(zone);
    return () => offset;
  }
  let formatter: Intl.DateTimeFormat;
  try {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
  } catch {
    throw new Error(`unknown time zone "${zone}"`);
  }
  // formatToParts is slow (tens of µs). Offsets change only on quarter hours, and at most once in
  // a day: a day whose first and last quarter hours have the same offset has it throughout, so
  // that is cached per day; the quarter hours of a day with a change are cached one by one.
  const QUARTER_HOUR = 900_000;
  const DAY = 86_400_000;
  const byDay = new Map<number, number>();
  const byQuarter = new Map<number, number>();
  const offsetAtQuarter = (bucket: number): number => {
    const cached = byQuarter.get(bucket);
    if (cached !== undefined) return cached;
    if (byQuarter.size > 50_000) byQuarter.clear();
    const offset = computeOffset(bucket * QUARTER_HOUR);
    byQuarter.set(bucket, offset);
    return offset;
  };
  return (utcMillis) => {
    const day = Math.floor(utcMillis / DAY);
    const sameAllDay = byDay.get(day);
    if (sameAllDay !== undefined) return sameAllDay;
    const first = offsetAtQuarter((day * DAY) / QUARTER_HOUR);
    const last = offsetAtQuarter(((day + 1) * DAY) / QUARTER_HOUR - 1);
    if (first === last) {
      if (byDay.size > 50_000) byDay.clear();
      byDay.set(day, first);
      return first;
    }
    return offsetAtQuarter(Math.floor(utcMillis / QUARTER_HOUR));
  };
  function computeOffset(utcMillis: number): number {
    const values: Record<string, number> = {};
    for (const part of formatter.formatToParts(new Date(utcMillis))) values[part.type] = Number(part.value);
    const local = Date.UTC(
      values.year ?? 1970, (values.month ?? 1) - 1, values.day ?? 1,
      values.hour ?? 0, values.minute ?? 0, values.second ?? 0,
    );
    return Math.round((local - Math.floor(utcMillis / 1000) * 1000) / 60_000);
  }
}
