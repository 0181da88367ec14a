/**
 * How a conversion says no: it returns {@link FAIL} and leaves the reason in {@link failure} (a
 * shared slot, so that a failing row allocates nothing it does not report). Shared by the
 * conversions (`_convert.ts`, `_dates.ts`, `_amounts.ts`) and the code that runs them.
 */
export const FAIL: unique symbol = Symbol('conversion failed');

/** Why the last conversion returned {@link FAIL}; `received`: the text that failed, when the caller cannot know it (a template's piece). */
export const failure: { message: string; received: string | undefined } = { message: '', received: undefined };

/** A conversion of a field's text into the request's value. */
export type Converter = (text: string) => unknown;

export function fail(message: string): typeof FAIL {
  failure.message = message;
  return FAIL;
}
