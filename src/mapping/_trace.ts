/**
 * Tracing a request path back to its sources: a problem the QuoteRequest check finds at
 * `application.drivers[1].dob` names the column (or NDJSON field) that fed it, e.g. `driver2_dob`.
 * The plan keeps, per instance, which sources each target reads; the row keeps which instance
 * built each group element (groups are packed, so `drivers[1]` may be driver 3).
 */
import { prefixSources, type InstancePlan, type Rec, type RowState } from './_plan.js';
import { formatSegments, parseRequestPath, type PathSegment } from './_request-paths.js';

/** The source columns behind `path` in this row's request (empty when none is known). */
export function traceColumns(root: InstancePlan, request: Rec, path: string, row: RowState): { columns: readonly string[]; kind: 'column' | 'field' } {
  let segments: PathSegment[] = [];
  try {
    segments = path === '' ? [] : parseRequestPath(path);
  } catch {
    return { columns: [], kind: 'column' };
  }
  const candidates: { instance: InstancePlan; from: number; srcPrefix: string }[] = [{ instance: root, from: 0, srcPrefix: '' }];
  let node: unknown = request;
  for (let i = 0; i < segments.length; i += 1) {
    if (node === null || typeof node !== 'object') break;
    node = (node as Rec)[segments[i] as string];
    if (node !== null && typeof node === 'object') {
      const owner = row.elements.find((e) => e.element === node);
      if (owner !== undefined) candidates.push({ instance: owner.instance, from: i + 1, srcPrefix: owner.srcPrefix });
    }
  }
  for (let c = candidates.length - 1; c >= 0; c -= 1) {
    const candidate = candidates[c];
    if (candidate === undefined) continue;
    const rel = formatSegments(segments.slice(candidate.from));
    const found: string[] = [];
    let kind: 'column' | 'field' = 'column';
    for (const entry of candidate.instance.trace) {
      if (entry.target === '#key') continue;
      const under = rel === '' || entry.target === rel || entry.target.startsWith(`${rel}.`) || entry.target.startsWith(`${rel}[`);
      const inside = entry.isPass && (rel.startsWith(`${entry.target}.`) || rel.startsWith(`${entry.target}[`));
      if (!under && !inside) continue;
      kind = entry.kind;
      const sources = prefixSources(entry.sources, entry.relative, candidate.srcPrefix);
      for (const source of sources) found.push(inside ? `${source}${rel.slice(entry.target.length)}` : source);
    }
    if (found.length > 0) return { columns: [...new Set(found)], kind };
  }
  return { columns: [], kind: 'column' };
}

/** True when one path is the other or lies below it. */
export function overlaps(path: string, other: string): boolean {
  return path === other || path.startsWith(`${other}.`) || path.startsWith(`${other}[`) || other.startsWith(`${path}.`) || other.startsWith(`${path}[`);
}
