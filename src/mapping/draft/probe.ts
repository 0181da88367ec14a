/**
 * Trying a drafted field on the sample: each distinct sample value goes through the field as the
 * mapping would convert it and through the QuoteRequest's check of that path, so that `init` never
 * places a column into a field its values contradict (digits, a 2-letter state, a date) without
 * saying so, in the words `check` would use.
 */
import { stringify } from 'yaml';
import { compileMapping } from '../compile.js';
import type { CompiledMapping } from '../types.js';

/** How a drafted field fares on the sample's values. */
export interface ProbeResult {
  /** Distinct non-empty values tried. */
  tried: number;
  /** How many of them the field or the QuoteRequest would refuse. */
  refused: number;
  /** The first refusal, as `check` words it (`expected a 2-letter upper-case state code`). */
  message: string | undefined;
}

/** Distinct values tried per field at most: enough to tell a code list from free text. */
const MAX_TRIED = 200;
/** The source's name in the one-field mapping a value is tried with. */
const PROBE = 'v';

const compiled = new Map<string, CompiledMapping | undefined>();

/**
 * Tries `values` (the sample's, as text; `numbers`: JSON numbers in the file) in a field written
 * `spec` with the source `v`, at the request path `path` (`application.drivers[0].dob`).
 */
export function probeField(spec: string | Record<string, unknown>, path: string, values: readonly string[], numbers: boolean): ProbeResult {
  const mapping = compileProbe(spec, path);
  const distinct = [...new Set(values.map((v) => v.trim()).filter((v) => v !== ''))].slice(0, MAX_TRIED);
  const result: ProbeResult = { tried: distinct.length, refused: 0, message: undefined };
  if (mapping === undefined) return result;
  for (const value of distinct) {
    const raw = numbers && /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value;
    const row = mapping.mapRow({ [PROBE]: raw }, 1);
    const issue = row.errors.find((e) => e.path === path || e.path.startsWith(`${path}.`) || e.path.startsWith(`${path}[`));
    if (issue === undefined) continue;
    result.refused += 1;
    result.message ??= issue.message.replace(/, got .*$/, '');
  }
  return result;
}

function compileProbe(spec: string | Record<string, unknown>, path: string): CompiledMapping | undefined {
  const field = typeof spec === 'string' ? { column: PROBE } : probeSpec(spec);
  const text = stringify({ version: 1, fields: { [path]: field } });
  if (!compiled.has(text)) {
    let mapping: CompiledMapping | undefined;
    try {
      mapping = compileMapping(text, 'probe.yaml');
    } catch {
      // A spec the loader refuses is a bug of the draft, which `init` reports when it loads the whole draft.
      mapping = undefined;
    }
    if (compiled.size > 500) compiled.clear();
    compiled.set(text, mapping);
  }
  return compiled.get(text);
}

/** The spec reading `v` instead of its column or path; a zone read from a column becomes UTC (the probe has one column). */
function probeSpec(spec: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...spec };
  if (typeof out.template === 'string') {
    out.template = out.template.replace(/\{([^{}|]+)(\|[^{}]*)?\}/g, (_, _name: string, pipes: string | undefined) => `{${PROBE}${pipes === undefined ? '' : ` ${pipes}`}}`);
  } else {
    delete out.path;
    out.column = PROBE;
  }
  if (typeof out.zone === 'object') out.zone = 'UTC';
  delete out.required;
  return out;
}
