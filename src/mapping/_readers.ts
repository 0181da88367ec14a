/**
 * How a mapping's sources read a record: a path below the record or a group's element, a template's
 * reference (a column, or in NDJSON a path), and a template with its conversions (`{x | digits}`).
 * Built once per field by the compiler (`_compiler.ts`); run on every row.
 */
import { buildPipe, FAIL, failure, TEMPLATE_PIPES, type Converter, type TemplatePipe } from './_convert.js';
import type { Reader, Rec } from './_plan.js';
import type { MappingProblems, YamlPath } from './_problems.js';
import { parseRequestPath, type PathSegment } from './_request-paths.js';
import { findClosest } from './_text.js';

/** A template's reference: the column (or path) it reads, and the conversions of its value. */
export interface TemplateRef {
  name: string;
  pipes: Converter[];
}

/** A template's reference: `name`, or `name | pipe | pipe`; undefined after reporting a mistake at `at`. */
export function parseReference(ref: string, decimalMark: '.' | ',', problems: MappingProblems, at: YamlPath): TemplateRef | undefined {
  const [name = '', ...pipeNames] = ref.split('|').map((part) => part.trim());
  const pipes: Converter[] = [];
  for (const pipe of pipeNames) {
    if (!(TEMPLATE_PIPES as readonly string[]).includes(pipe)) {
      const close = findClosest(pipe, TEMPLATE_PIPES);
      problems.add(at, `unknown conversion "${pipe}" in the template reference "{${ref}}"`,
        close === undefined ? `a reference converts with ${TEMPLATE_PIPES.join(', ')}, e.g. "{med_pay | digits}_per_person"` : `did you mean "${close}"?`);
      return undefined;
    }
    pipes.push(buildPipe(pipe as TemplatePipe, decimalMark));
  }
  if (name === '') {
    problems.add(at, `the template reference "{${ref}}" names no column`, 'write the column first: "{med_pay | digits}"');
    return undefined;
  }
  return { name, pipes };
}

/**
 * A template's text: its parts (`split` by references, odd ones the references) with each
 * reference's value trimmed and converted. A reference whose text is in `empties` (`N/A`) is empty;
 * every reference empty leaves the field out; a value a conversion refuses is {@link FAIL}, the
 * text in `failure.received`. `collapse`: runs of spaces left by empty references become one.
 */
export function buildTemplateReader(parts: readonly string[], refs: readonly TemplateRef[], relative: boolean,
  empties: ReadonlySet<string> | undefined, collapse: boolean): Reader {
  const readers: Reader[] = refs.map((ref) => buildNameReader(ref.name, relative));
  return (record, item) => {
    let out = '';
    let any = false;
    for (let i = 0; i < parts.length; i += 1) {
      if (i % 2 === 0) out += parts[i];
      else {
        const ref = (i - 1) / 2;
        const value = readers[ref]?.(record, item);
        if (value === undefined || value === null) continue;
        let piece = typeof value === 'string' ? value.trim() : String(value);
        if (empties?.has(piece.toLowerCase()) === true) piece = '';
        if (piece !== '') {
          any = true;
          for (const convert of refs[ref]?.pipes ?? []) {
            const converted = convert(piece);
            if (converted === FAIL) {
              failure.received = piece;
              return FAIL;
            }
            piece = typeof converted === 'string' ? converted : String(converted);
          }
        }
        out += piece;
      }
    }
    if (!any) return undefined;
    return collapse ? out.replace(/\s{2,}/g, ' ').trim() : out;
  };
}

export function buildPathReader(segments: readonly PathSegment[], relative: boolean): Reader {
  const first = segments[0] ?? '';
  if (segments.length === 1) {
    return relative ? (_record, item) => (item as Rec | undefined)?.[first as string] : (record) => record[first as string];
  }
  return (record, item) => {
    let node: unknown = relative ? item : record;
    for (const segment of segments) {
      if (node === null || typeof node !== 'object') return undefined;
      node = (node as Rec)[segment as string];
    }
    return node;
  };
}

/** A template reference: the key of that exact name, else (NDJSON) the path it spells. */
export function buildNameReader(name: string, relative: boolean): Reader {
  let segments: PathSegment[] | undefined;
  if (/[.[]/.test(name)) {
    try {
      segments = parseRequestPath(name);
    } catch {
      segments = undefined;
    }
  }
  const byPath = segments === undefined ? undefined : buildPathReader(segments, relative);
  return (record, item) => {
    const holder = (relative ? item : record) as Rec | undefined;
    const value = holder?.[name];
    return value === undefined && byPath !== undefined ? byPath(record, item) : value;
  };
}
