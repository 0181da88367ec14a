/** Names longer than this get no did-you-mean: nobody mistypes them, and comparing them is costly. */
const MAX_COMPARED_LENGTH = 256;

/**
 * Edit distance (insert, delete, substitute), used for did-you-mean hints; gives up (returns
 * `limit + 1`) as soon as the distance must exceed `limit`.
 */
export function measureDistance(a: string, b: string, limit = Number.POSITIVE_INFINITY): number {
  if (a === b) return 0;
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    let best = i;
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const value = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost);
      current.push(value);
      if (value < best) best = value;
    }
    if (best > limit) return limit + 1;
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/** The closest candidate when it is close enough to be a likely typo. */
export function findClosest(word: string, candidates: Iterable<string>): string | undefined {
  if (word.length > MAX_COMPARED_LENGTH) return undefined;
  const lower = word.toLowerCase();
  const limit = Math.max(2, Math.floor(word.length / 3));
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const candidate of candidates) {
    // Cheap tests first: a header may hold many columns, some of them huge.
    if (Math.abs(candidate.length - word.length) >= bestDistance) continue;
    const distance = measureDistance(lower, candidate.toLowerCase(), bestDistance - 1);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** A name as shown in a message: a very long one is cut, saying how long it was. */
export function shortName(name: string): string {
  return name.length <= 80 ? name : `${name.slice(0, 60)}… (${name.length} characters)`;
}

/** Quotes a value for a message: strings in double quotes, others as JSON, long ones cut. */
export function quoteValue(value: unknown): string {
  let text: string;
  if (typeof value === 'string') {
    text = JSON.stringify(value);
    // A long value is cut inside its quotes, so that the quote still closes (groups take quoted values out).
    return text.length <= 80 ? text : `${JSON.stringify(Array.from(value).slice(0, 72).join('')).slice(0, -1)}…"`;
  }
  if (value === undefined) text = 'nothing';
  else {
    try {
      text = JSON.stringify(value) ?? String(value);
    } catch {
      text = String(value);
    }
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
