/**
 * A quick yes/no validator built once from a zod schema. zod's `safeParse` copies the whole
 * value and records paths as it goes, which costs more per row than reading and mapping it; most
 * rows are valid, so they are answered here, and only a row this says "no" (or "not sure") to is
 * parsed by zod for its exact messages. The contract: it never says yes when zod would say no.
 * It runs zod's own checks (regexes, formats, refinements) on the values, so the formats are
 * zod's; any schema construct it does not know makes it answer "not sure" (false).
 *
 * The validator is generated as one function of straight-line code (a closure per schema node
 * would make every call site see every node, and V8 could inline none of them). Regex formats
 * call the regex itself; any other check runs zod's own check function.
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

/** Trait names of zod string formats whose check is exactly `pattern.test(value)` (zod 4 core/checks.js). */
const PATTERN_ONLY = ['$ZodCheckRegex', '$ZodEmail', '$ZodISODate', '$ZodISODateTime'];

/** Builds the quick validator of `schema`. */
export function buildProbe(schema: z.ZodType): Probe {
  const generator = new ProbeGenerator();
  const lines = generator.emit(schema as unknown as Internals, 'value');
  const source = [...generator.constants, 'return function probe(value) {', ...lines, 'return true;', '};'].join('\n');
  // Generated from the schema's structure only (no data), so nothing outside it is evaluated.
  return new Function('K', source)(generator.values) as Probe;
}

class ProbeGenerator {
  /** Values the generated code refers to as `K[i]`, bound to local constants `k<i>`. */
  readonly values: unknown[] = [];
  readonly constants: string[] = [];
  #variables = 0;

  constant(value: unknown): string {
    const name = `k${this.values.length}`;
    this.constants.push(`const ${name} = K[${this.values.length}];`);
    this.values.push(value);
    return name;
  }

  variable(): string {
    this.#variables += 1;
    return `v${this.#variables}`;
  }

  /** Lines that `return false` unless `value` (an expression without side effects) passes `schema`. */
  emit(schema: Internals, value: string): string[] {
    const def = schema._zod.def;
    const checks: Check[] = [...(schema._zod.traits.has('$ZodCheck') ? [schema as unknown as Check] : []), ...(def.checks ?? [])];
    const lines = this.emitBase(def, value);
    for (const check of checks) lines.push(...this.emitCheck(check, value));
    return lines;
  }

  emitCheck(check: Check, value: string): string[] {
    const traits = (check as unknown as Internals)._zod.traits;
    const def = check._zod.def as Check['_zod']['def'] & { pattern?: RegExp; minimum?: number };
    if (def.when === undefined && def.pattern instanceof RegExp && PATTERN_ONLY.some((t) => traits.has(t))) {
      const regex = this.constant(def.pattern);
      return [`${regex}.lastIndex = 0;`, `if (!${regex}.test(${value})) return false;`];
    }
    const run = this.constant(runCheck(check));
    // A string twice as long as a minimum length (in UTF-16 units) has that many code points.
    if (traits.has('$ZodCheckMinLength') && typeof def.minimum === 'number') {
      return [`if (!(typeof ${value} === 'string' && ${value}.length >= ${2 * def.minimum}) && !${run}(${value})) return false;`];
    }
    return [`if (!${run}(${value})) return false;`];
  }

  emitBase(def: Internals['_zod']['def'], value: string): string[] {
    switch (def.type) {
      case 'string':
        return [`if (typeof ${value} !== 'string') return false;`];
      case 'number':
        return [`if (typeof ${value} !== 'number' || !Number.isFinite(${value})) return false;`];
      case 'boolean':
        return [`if (typeof ${value} !== 'boolean') return false;`];
      case 'unknown':
      case 'any':
        return [];
      case 'optional':
        if (def.innerType === undefined) return ['return false;'];
        return [`if (${value} !== undefined) {`, ...this.emit(def.innerType as unknown as Internals, value), '}'];
      case 'array': {
        if (def.element === undefined) return ['return false;'];
        const i = this.variable();
        const element = this.variable();
        return [
          `if (!Array.isArray(${value})) return false;`,
          `for (let ${i} = 0; ${i} < ${value}.length; ${i} += 1) {`,
          `const ${element} = ${value}[${i}];`,
          ...this.emit(def.element as unknown as Internals, element),
          '}',
        ];
      }
      case 'union': {
        // Rare here (IP addresses): each option is its own generated probe.
        const options = this.constant((def.options ?? []).map(buildProbe));
        return [`if (!${options}.some((option) => option(${value}))) return false;`];
      }
      case 'object': {
        const shape = def.shape ?? {};
        const catchallType = (def.catchall as unknown as Internals | undefined)?._zod.def.type;
        if (catchallType !== undefined && catchallType !== 'never' && catchallType !== 'unknown') return ['return false;'];
        const lines = [`if (${value} === null || typeof ${value} !== 'object' || Array.isArray(${value})) return false;`];
        for (const [key, member] of Object.entries(shape)) {
          const child = this.variable();
          lines.push(`const ${child} = ${value}[${JSON.stringify(key)}];`, ...this.emit(member as unknown as Internals, child));
        }
        // A strict object rejects unknown keys; a plain or loose one does not.
        if (catchallType === 'never') {
          const keys = this.constant(new Set(Object.keys(shape)));
          lines.push(`for (const key in ${value}) if (!${keys}.has(key)) return false;`);
        }
        return lines;
      }
      default:
        return ['return false;'];
    }
  }
}

/** zod's own check, as a yes/no function (a `when` that does not apply counts as yes). */
function runCheck(check: Check): Probe {
  const when = check._zod.def.when;
  return (value) => {
    const payload = { value, issues: [] as unknown[] };
    if (when !== undefined && !when(payload)) return true;
    if (check._zod.check(payload) instanceof Promise) return false;
    return payload.issues.length === 0;
  };
}
