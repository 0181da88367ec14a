/**
 * Target paths of a mapping, checked against the QuoteRequest zod schema at compile time, so a
 * typo in a request path is a mapping error with a did-you-mean, not a silent loss per row.
 */
import type { z } from 'zod';
import { QuoteRequest } from '../partner/schemas.js';

export type PathSegment = string | number;

/** What a request path points at. `any` below an open object (e.g. `application.ubi`). */
export type TargetKind = 'string' | 'number' | 'boolean' | 'object' | 'array' | 'any';

export type TargetLookup =
  | { ok: true; kind: TargetKind; schema: z.ZodType | undefined }
  | { ok: false; message: string; segment?: string; candidates: readonly string[] };

/** Splits `application.drivers[0].address.state` into segments; throws on a malformed path. */
export function parseRequestPath(path: string): PathSegment[] {
  const segments: PathSegment[] = [];
  const pattern = /([A-Za-z_$][A-Za-z0-9_$-]*)|\[(\d+)\]|(\.)/gy;
  let expectName = true;
  let match: RegExpExecArray | null;
  let last = 0;
  while ((match = pattern.exec(path)) !== null) {
    last = pattern.lastIndex;
    if (match[1] !== undefined) {
      if (!expectName) break;
      segments.push(match[1]);
      expectName = false;
    } else if (match[2] !== undefined) {
      if (expectName) break;
      segments.push(Number(match[2]));
    } else {
      if (expectName) break;
      expectName = true;
    }
    if (last === path.length) break;
  }
  if (last !== path.length || expectName || segments.length === 0 || typeof segments[0] === 'number') {
    throw new Error(`"${path}" is not a path such as application.drivers[0].dob`);
  }
  return segments;
}

/** Writes segments back as `a.b[0].c`. */
export function formatSegments(segments: readonly PathSegment[]): string {
  let out = '';
  for (const segment of segments) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out === '' ? segment : `.${segment}`;
  }
  return out;
}

interface ZodInternals {
  _zod: { def: { type: string; innerType?: z.ZodType; shape?: Record<string, z.ZodType>; element?: z.ZodType; catchall?: z.ZodType; options?: z.ZodType[]; in?: z.ZodType } };
}

function unwrap(schema: z.ZodType): z.ZodType {
  let current = schema as unknown as ZodInternals;
  for (let i = 0; i < 20; i += 1) {
    const def = current._zod.def;
    if ((def.type === 'optional' || def.type === 'nullable' || def.type === 'default') && def.innerType !== undefined) {
      current = def.innerType as unknown as ZodInternals;
    } else if (def.type === 'pipe' && def.in !== undefined) {
      current = def.in as unknown as ZodInternals;
    } else break;
  }
  return current as unknown as z.ZodType;
}

function kindOf(schema: z.ZodType): TargetKind {
  const type = (schema as unknown as ZodInternals)._zod.def.type;
  if (type === 'string' || type === 'number' || type === 'boolean' || type === 'object' || type === 'array') return type;
  if (type === 'union') {
    const options = (schema as unknown as ZodInternals)._zod.def.options ?? [];
    const kinds = new Set(options.map((option) => kindOf(unwrap(option))));
    return kinds.size === 1 ? [...kinds][0] ?? 'any' : 'any';
  }
  return 'any';
}

/** Describes the node at `segments` below `root` (the QuoteRequest by default). */
export function lookUpTarget(segments: readonly PathSegment[], root: z.ZodType = QuoteRequest): TargetLookup {
  let schema = unwrap(root);
  for (let i = 0; i < segments.length; i += 1) {
    const segment = segments[i];
    const def = (schema as unknown as ZodInternals)._zod.def;
    const where = i === 0 ? 'the QuoteRequest' : formatSegments(segments.slice(0, i));
    if (segment === undefined) break;
    if (typeof segment === 'number') {
      if (def.type !== 'array' || def.element === undefined) {
        return { ok: false, message: `${where} is not an array: [${segment}] does not apply`, candidates: [] };
      }
      schema = unwrap(def.element);
      continue;
    }
    if (def.type === 'array') {
      return { ok: false, message: `${where} is an array: write ${where}[0].${segment} or use a group`, candidates: [] };
    }
    if (def.type !== 'object' || def.shape === undefined) {
      return { ok: false, message: `${where} is a single value, it has no member "${segment}"`, candidates: [] };
    }
    const child = def.shape[segment];
    if (child === undefined) {
      const catchall = def.catchall;
      // An open object (looseObject) accepts members we do not know.
      if (catchall !== undefined && (catchall as unknown as ZodInternals)._zod.def.type === 'unknown') {
        return { ok: true, kind: 'any', schema: undefined };
      }
      const candidates = Object.keys(def.shape);
      return { ok: false, message: `${where} has no member "${segment}"`, segment, candidates };
    }
    schema = unwrap(child);
  }
  return { ok: true, kind: kindOf(schema), schema };
}

/** The element schema of an array node, for a group's relative paths. */
export function elementOf(schema: z.ZodType | undefined): z.ZodType | undefined {
  if (schema === undefined) return undefined;
  const def = (unwrap(schema) as unknown as ZodInternals)._zod.def;
  return def.type === 'array' && def.element !== undefined ? unwrap(def.element) : undefined;
}

/** One leaf of the QuoteRequest: a value a mapping can fill (lists of objects written `[]`). */
export interface RequestLeaf {
  /** E.g. `application.drivers[].dob`. */
  path: string;
  kind: TargetKind;
  required: boolean;
}

let leaves: readonly RequestLeaf[] | undefined;

/** Every leaf of the QuoteRequest, in the schema's order (an open object such as `application.ubi` is one leaf). */
export function listRequestLeaves(): readonly RequestLeaf[] {
  if (leaves !== undefined) return leaves;
  const out: RequestLeaf[] = [];
  const walk = (schema: z.ZodType, path: string, required: boolean): void => {
    const inner = unwrap(schema);
    const def = (inner as unknown as ZodInternals)._zod.def;
    if (def.type === 'object' && def.shape !== undefined && Object.keys(def.shape).length > 0) {
      for (const [key, child] of Object.entries(def.shape)) walk(child, path === '' ? key : `${path}.${key}`, required && !isOptional(child));
    } else if (def.type === 'array' && def.element !== undefined && (unwrap(def.element) as unknown as ZodInternals)._zod.def.type === 'object') {
      walk(def.element, `${path}[]`, required);
    } else {
      out.push({ path, kind: kindOf(inner), required });
    }
  };
  walk(QuoteRequest, '', true);
  leaves = out;
  return out;
}

function isOptional(schema: z.ZodType): boolean {
  return (schema as unknown as ZodInternals)._zod.def.type === 'optional';
}

/** The members an object of the QuoteRequest must have (`application.drivers[0].name` → first_name, last_name). */
export function requiredMembers(path: string): string[] {
  let segments: PathSegment[];
  try {
    segments = parseRequestPath(path);
  } catch {
    return [];
  }
  const lookup = lookUpTarget(segments);
  if (!lookup.ok || lookup.schema === undefined) return [];
  const def = (lookup.schema as unknown as ZodInternals)._zod.def;
  if (def.type !== 'object' || def.shape === undefined) return [];
  return Object.entries(def.shape).filter(([, child]) => !isOptional(child)).map(([key]) => key);
}

/**
 * Every object of the QuoteRequest that has members it must have when it is there, with them: what
 * an optional object (an incident) needs once a mapping fills any of it. docs/mapping.md shows it
 * (test/mapping/required-members-docs.test.ts keeps the two equal).
 */
export function listRequiredMembers(): { object: string; members: string[]; optional: boolean }[] {
  const out: { object: string; members: string[]; optional: boolean }[] = [];
  const walk = (schema: z.ZodType, path: string, optional: boolean): void => {
    const def = (unwrap(schema) as unknown as ZodInternals)._zod.def;
    if (def.type === 'array' && def.element !== undefined) {
      walk(def.element, `${path}[]`, optional);
      return;
    }
    if (def.type !== 'object' || def.shape === undefined) return;
    const members = Object.entries(def.shape).filter(([, child]) => !isOptional(child)).map(([key]) => key);
    if (members.length > 0 && path !== '') out.push({ object: path, members, optional });
    for (const [key, child] of Object.entries(def.shape)) walk(child, path === '' ? key : `${path}.${key}`, optional || isOptional(child));
  };
  walk(QuoteRequest, '', false);
  return out;
}

/** The table of {@link listRequiredMembers} as docs/mapping.md shows it. */
export function renderRequiredMembersTable(): string {
  const rows = listRequiredMembers().map(({ object, members, optional }) =>
    `| \`${object}\` | ${optional ? 'no: when any of it is mapped' : 'yes'} | ${members.map((m) => `\`${m}\``).join(', ')} |`);
  return ['| object | always sent | members it must have |', '|---|---|---|', ...rows, ''].join('\n');
}
