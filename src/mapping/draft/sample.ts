/**
 * The first rows of an input, for `init`: the header, the delimiter when it is not the format's
 * own (a `;` file named `.csv`), and at most `rows` records; memory is bounded whatever the file.
 */
import { openInput, type InputFormat } from '../../input/index.js';

export interface Sample {
  format: InputFormat;
  /** A delimiter found in the header other than the format's default. */
  delimiter: string | undefined;
  columns: readonly string[] | null;
  records: Record<string, unknown>[];
  /** Rows that could not be read (left out of the sample). */
  unreadable: number;
  /** True when the reading stopped early (Ctrl-C / SIGTERM). */
  interrupted: boolean;
}

/** Delimiters tried when a `.csv` header comes out as one column. */
const OTHER_DELIMITERS = [';', '\t', '|'];

/** Reads the header and the first `rows` records of `path`; throws E_INPUT like `openInput`. */
export async function readSample(path: string, options: { rows: number; signal?: AbortSignal }): Promise<Sample> {
  let reader = await openInput(path);
  let delimiter: string | undefined;
  const only = reader.columns?.length === 1 ? reader.columns[0] ?? '' : undefined;
  const other = only === undefined ? undefined : OTHER_DELIMITERS.find((d) => only.includes(d));
  if (other !== undefined && reader.format !== 'ndjson') {
    await reader.close();
    delimiter = other;
    reader = await openInput(path, { delimiter });
  }
  const sample: Sample = { format: reader.format, delimiter, columns: reader.columns, records: [], unreadable: 0, interrupted: false };
  try {
    for await (const item of reader) {
      if (options.signal?.aborted === true) {
        sample.interrupted = true;
        break;
      }
      if (item.kind === 'record') sample.records.push(item.record);
      else sample.unreadable += 1;
      if (sample.records.length + sample.unreadable >= options.rows) break;
    }
  } finally {
    await reader.close();
  }
  return sample;
}
