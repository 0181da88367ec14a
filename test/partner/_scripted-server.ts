/**
 * A tiny loopback HTTP server that answers from a script, for answers the sandbox never gives
 * (502, 504, 501, redirects, non-JSON bodies, a body echoing the key). Real sockets, no mocks.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ScriptedAnswer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

export interface ScriptedServer {
  url: string;
  /** Headers of each request received, in order. */
  requests: IncomingHttpHeaders[];
  close(): Promise<void>;
}

/** Answers the n-th request with `script[n]` (the last entry repeats). */
export async function startScriptedServer(
  script: readonly (ScriptedAnswer | ((headers: IncomingHttpHeaders) => ScriptedAnswer))[],
): Promise<ScriptedServer> {
  const requests: IncomingHttpHeaders[] = [];
  const server = createServer((req, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      requests.push(req.headers);
      const entry = script[Math.min(requests.length - 1, script.length - 1)];
      if (entry === undefined) throw new Error('empty script');
      const answer = typeof entry === 'function' ? entry(req.headers) : entry;
      res.writeHead(answer.status, answer.headers ?? {});
      res.end(answer.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A loopback port with nothing listening on it (bound, then released). */
export async function findClosedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
