/**
 * A PostgreSQL ledger's connection string, taken apart without the driver: its schema, and how it
 * may be shown (never with its password).
 */
import { QuoteBatchError } from '../../errors.js';

/** True for a ledger named by a `postgres://` (or `postgresql://`) connection string. */
export function isPostgresTarget(target: string): boolean {
  return /^postgres(ql)?:\/\//i.test(target);
}

/** A ledger named by a `postgres://` connection string, taken apart. */
export interface PgTarget {
  /** What `pg` connects with (no `schema` parameter). */
  connectionString: string;
  /** The schema the ledger lives in (`?schema=`, default `quote_batch`). */
  schema: string;
  /** The target as it may be shown: no password. */
  display: string;
  /** Takes the password out of a text (an error's message), in every form it may appear. */
  redact(text: string): string;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Parses a `postgres://user:password@host:port/db?schema=name` connection string. */
export function parsePgTarget(target: string): PgTarget {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    throw new QuoteBatchError('E_CONFIG', 'the ledger\'s connection string is not a URL (expected postgres://user@host:5432/database)', {
      hint: 'write it as postgres://user@host:5432/database; give the password in PGPASSWORD or ~/.pgpass rather than in the URL',
    });
  }
  const password = decodeURIComponent(url.password);
  const rawPassword = url.password;
  const schema = url.searchParams.get('schema') ?? 'quote_batch';
  url.searchParams.delete('schema');
  const redact = (text: string): string => {
    if (password === '') return text;
    let out = text;
    for (const form of new Set([password, encodeURIComponent(password), rawPassword, JSON.stringify(password).slice(1, -1)])) {
      if (form !== '') out = out.split(form).join('***');
    }
    return out;
  };
  // Shown as given (its schema too) without its password: a command a hint prints runs as it is, with PGPASSWORD or ~/.pgpass.
  const shown = new URL(target);
  shown.password = '';
  if (!SCHEMA_NAME.test(schema)) {
    throw new QuoteBatchError('E_CONFIG', `the ledger's schema name "${redact(schema)}" is not a plain lower-case SQL name`, { hint: 'use letters, digits and _ (e.g. ?schema=quote_batch)' });
  }
  return { connectionString: url.href, schema, display: redact(shown.href), redact };
}

/** Shows a ledger target (a file path, or a connection string without its password). */
export function displayTarget(target: string): string {
  return isPostgresTarget(target) ? safeDisplay(target) : target;
}

function safeDisplay(target: string): string {
  try {
    return parsePgTarget(target).display;
  } catch {
    return 'postgres://…';
  }
}

