// Small HTTP helpers for the sandbox tests (real requests on loopback).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const FIXTURES = fileURLToPath(new URL('../fixtures/sandbox/', import.meta.url));
export const AGENTS_FILE = `${FIXTURES}agents.csv`;
export const KEY = 'test-sandbox-key';

export const VALIDATE = '/account/v1/agent/validate';
export const QUOTE = '/partner/v2/policy/quote';
export const LEAD = '/partner/v2/policy/lead';

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

/** Reads a fixture request body (parsed, so a test may change a copy of it). */
export function readFixture(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(`${FIXTURES}${name}.json`, 'utf8')) as Record<string, unknown>;
}

/**
 * POSTs `body` (an object is serialised; a string is sent as is). `key: null` sends no key.
 * Rejects when the sandbox resets the connection.
 */
export async function post(
  baseUrl: string, path: string, body: unknown, key: string | null = KEY, signal?: AbortSignal,
): Promise<Reply> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (key !== null) headers['x-api-key'] = key;
  const response = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers,
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal,
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}
