/**
 * The objects a CSV decoder gives its records as: `{column: value}`, built by a function made once
 * per header, so that every record of a file shares one object shape.
 */

/** Above this many columns a record is built key by key (V8 keeps such objects as dictionaries anyway). */
const MAX_LITERAL_COLUMNS = 1000;

/** Builds `{column: value}` objects; the column list is fixed, so V8 shares one object shape. */
export function makeRecordBuilder(columns: readonly string[]): (values: string[]) => Record<string, unknown> {
  const count = columns.length;
  if (!columns.includes('__proto__') && count <= MAX_LITERAL_COLUMNS) {
    // One object literal with every column as a key: each record then shares one hidden class,
    // so the compiled mapping's property reads stay fast (a record built key by key becomes a
    // slow dictionary object past a few dozen keys). The keys are JSON string literals.
    const body = columns.map((column, i) => `${JSON.stringify(column)}: v[${i}]`).join(',\n');
    return new Function('v', `return {\n${body}\n};`) as (values: string[]) => Record<string, unknown>;
  }
  if (!columns.includes('__proto__')) {
    return (values) => {
      const record: Record<string, unknown> = {};
      for (let i = 0; i < count; i += 1) record[columns[i] as string] = values[i];
      return record;
    };
  }
  // An assignment to "__proto__" would set the prototype instead of a key.
  return (values) => {
    const record: Record<string, unknown> = {};
    for (let i = 0; i < count; i += 1) {
      Object.defineProperty(record, columns[i] as string, { value: values[i], enumerable: true, writable: true, configurable: true });
    }
    return record;
  };
}
