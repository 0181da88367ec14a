/**
 * The first rows of an input, for `init`: the header, the delimiter when it is not the format's
 * own (a `;` file named `.csv`), and the sample values of each field from at most `rows` records,
 * gathered as they stream (`SampleCollector`): memory is bounded whatever the file.
 */
import { shellWord } from '../../advice.js';
import { QuoteBatchError } from '../../errors.js';
import { openInput, UnknownFormatError, type InputFormat, type InputReader } from '../../input/index.js';
import { SampleCollector, type SourceScope } from './sources.js';

export interface Sample {
  format: InputFormat;
  /** A delimiter found in the header other than the format's default. */
  delimiter: string | undefined;
  columns: readonly string[] | null;
  /** The fields and groups with their sample values. */
  scope: SourceScope;
  /** Records read into the sample (fewer than asked when the file ends, or the sample is full). */
  rows: number;
  /** Rows that could not be read (left out of the sample). */
  unreadable: number;
  /** True when the reading stopped early (Ctrl-C / SIGTERM). */
  interrupted: boolean;
}

/** Delimiters tried when a `.csv` header comes out as one column. */
const OTHER_DELIMITERS = [';', '\t', '|'];

/** Reads the header and the first `rows` records of `path`; throws E_INPUT like `openInput`. */
export async function readSample(path: string, options: { rows: number; signal?: AbortSignal }): Promise<Sample> {
  let reader: InputReader;
  try {
    reader = await openInput(path);
  } catch (error) {
    // There is no mapping yet to state the format in: the name is the way.
    if (!(error instanceof UnknownFormatError)) throw error;
    throw new QuoteBatchError('E_INPUT', error.message, {
      hint: `init tells the format from the name: copy or rename the file, e.g. cp ${shellWord(path)} ${shellWord(path.replace(/(\.[^./\\]*)?$/, '.csv'))}`,
    });
  }
  let delimiter: string | undefined;
  const only = reader.columns?.length === 1 ? reader.columns[0] ?? '' : undefined;
  const other = only === undefined ? undefined : OTHER_DELIMITERS.find((d) => only.includes(d));
  if (other !== undefined && reader.format !== 'ndjson') {
    await reader.close();
    delimiter = other;
    reader = await openInput(path, { delimiter });
  }
  const collector = new SampleCollector(reader.columns);
  let unreadable = 0;
  let interrupted = false;
  try {
    for await (const item of reader) {
      if (options.signal?.aborted === true) {
        interrupted = true;
        break;
      }
      if (item.kind === 'record') collector.add(item.record);
      else unreadable += 1;
      if (collector.rows + unreadable >= options.rows || collector.full) break;
    }
  } finally {
    await reader.close();
  }
  return { format: reader.format, delimiter, columns: reader.columns, scope: collector.scope(), rows: collector.rows, unreadable, interrupted };
}
