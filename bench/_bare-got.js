// The "bare got" yardstick of bench/got-loop.js and bench/client-cpu.js: one got instance with a
// keep-alive agent of `concurrency` sockets, JSON headers and the key, no retries, text bodies.
// Defined once so that both benchmarks compare quote-batch with the same thing. Imports only got
// and node:http: the process being measured loads nothing else.
import * as http from 'node:http';
import got from 'got';

/** `{ client, agent }`; call `agent.destroy()` when done. `prefixUrl` is optional. */
export function createBareGot({ apiKey, concurrency, prefixUrl }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency, maxFreeSockets: concurrency });
  const client = got.extend({
    ...(prefixUrl === undefined ? {} : { prefixUrl }),
    agent: { http: agent },
    headers: { 'x-api-key': apiKey, 'content-type': 'application/json', accept: 'application/json' },
    retry: { limit: 0 },
    timeout: { request: 30_000 },
    throwHttpErrors: false,
    followRedirect: false,
    responseType: 'text',
  });
  return { client, agent };
}
