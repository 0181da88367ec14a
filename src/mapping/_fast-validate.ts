/**
 * A quick yes/no validator built once from a zod schema. zod's `safeParse` copies the whole
 * value and records paths as it goes, which costs more per row than reading and mapping it; most
 * rows are valid, so they are answered here, and only a row this says "no" (or "not sure") to is
 * parsed by zod for its exact messages. The contract: it never says yes when zod would say no.
 * It runs zod's own checks (regexes, formats, refinements) on the values, so the formats are
 * zod's; any schema construct it does not know makes it answer "not sure" (false).
 */
import type { z } from 'zod';

type Probe = (value: unknown) => boolean;

interface Check {
  _zod: {
    check: (payload: { value: unknown; issues: unknown[] }) => unknown;
    def: { when?: (payload: { value: unknown; issues: unknown[] }) => boolean };
  };
}

interface Internals {
  _zod: {
    traits: Set<string>;
    def: {
      type: string;
      checks?: Check[];
      innerType?: z.ZodType;
      shape?: Record<string, z.ZodType>;
      element?: z.ZodType;
      options?: z.ZodType[];
      catchall?: z.ZodType;
    };
  };
}

const notSure: Probe = () => false;

/** Builds the quick validator of `schema`. */
export function buildProbe(schema: z.ZodType): Probe {
  const inner = schema as unknown as Internals;
  const def = inner._zod.def;
  const checks: Check[] = [...(inner._zod.traits.has('$ZodCheck') ? [schema as unknown as Check] : []), ...(def.checks ?? [])];
  const base = buildBase(def);
  if (checks.length === 0) return base;
  const payload = { value: undefined as unknown, issues: [] as unknown[] };
  return (value) => {
    if (!base(value)) return false;
    payload.value = value;
    payload.issues.length = 0;
    for (const check of checks) {
      const when = check._zod.def.when;
      if (when !== undefined && !when(payload)) continue;
      if (check._zod.check(payload) instanceof Promise) return false;
      if (payload.issues.length > 0) return false;
    }
    return true;
  };
}

function buildBase(def: Internals['_zod']['def']): Probe {
  switch (def.type) {
    case 'string':
      return (value) => typeof value === 'string';
    case 'number':
      return (value) => typeof value === 'number' && Number.isFinite(value);
    case 'boolean':
      return (value) => typeof value === 'boolean';
    case 'unknown':
    case 'any':
      return () => true;
    case 'optional': {
      if (def.innerType === undefined) return notSure;
      const inner = buildProbe(def.innerType);
      return (value) => value === undefined || inner(value);
    }
    case 'array': {
      if (def.element === undefined) return notSure;
      const element = buildProbe(def.element);
      return (value) => {
        if (!Array.isArray(value)) return false;
        for (let i = 0; i < value.length; i += 1) if (!element(value[i])) return false;
        return true;
      };
    }
    case 'union': {
      const options = (def.options ?? []).map(buildProbe);
      return (value) => options.some((option) => option(value));
    }
    case 'object': {
      const shape = def.shape ?? {};
      const keys = Object.keys(shape);
      const probes = keys.map((key) => buildProbe(shape[key] as z.ZodType));
      const catchallType = (def.catchall as unknown as Internals | undefined)?._zod.def.type;
      // A strict object rejects unknown keys; a plain or loose one does not.
      const strict = catchallType === 'never';
      if (catchallType !== undefined && catchallType !== 'never' && catchallType !== 'unknown') return notSure;
      return (value) => {
        if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
        const record = value as Record<string, unknown>;
        for (let i = 0; i < keys.length; i += 1) {
          if (!(probes[i] as Probe)(record[keys[i] as string])) return false;
        }
        if (strict) for (const key in record) if (!(key in shape)) return false;
        return true;
      };
    }
    default:
      return notSure;
  }
}
