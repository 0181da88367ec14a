/**
 * A real forward proxy on loopback, as the ops of a company run one: the `proxy` package (the one
 * proxy-agent's own tests use) answers CONNECT by opening a TCP tunnel to the target, and, when
 * credentials are set, answers 407 to a CONNECT without them. It counts the tunnels it opened and
 * logs their targets, so that a test can tell that every connection went through it (an HTTPS
 * request inside a tunnel is not visible to a proxy: the partner's connection count says the rest).
 *
 * Misbehaving mode `cutAnswersToRequestsOver`: the tunnel is cut as soon as the partner starts to
 * answer a request (a client flight) of at least that many bytes — the request was forwarded whole,
 * the answer never arrives, as with a proxy that drops tunnels mid-request. Smaller flights (the TLS
 * handshake, agent validations) pass. Everything is bounded: close() ends every socket.
 */
import { createServer, type IncomingMessage } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { createProxy, type ProxyServer } from 'proxy';

export interface ForwardProxyOptions {
  /** Basic credentials the proxy asks for (407 without them). */
  credentials?: { user: string; password: string };
  /** Cut each tunnel when the partner answers a client flight of at least this many bytes. */
  cutAnswersToRequestsOver?: number;
  /**
   * Host names the proxy resolves itself (to loopback addresses), as a company proxy resolves names
   * the host behind it cannot: a partner reachable only through the proxy.
   */
  hosts?: Record<string, string>;
  /** Serve the proxy itself over TLS (an `https://` proxy) with this certificate and key. */
  tls?: { cert: string; key: string };
}

export interface ForwardProxy {
  /** `http://127.0.0.1:<port>` (`https://` with `tls`), without credentials. */
  readonly url: string;
  /** The URL with credentials, percent-encoded as a user writes them. */
  urlWith(user: string, password: string): string;
  /** The target (`host:port`) of every CONNECT received, in order (refused ones included). */
  readonly connects: string[];
  /** CONNECTs answered 407. */
  readonly refused: number;
  /** Tunnels cut by `cutAnswersToRequestsOver`. */
  readonly cut: number;
  close(): Promise<void>;
}

export async function startForwardProxy(options: ForwardProxyOptions = {}): Promise<ForwardProxy> {
  const server: ProxyServer = createProxy(options.tls === undefined ? createServer() : createTlsServer(options.tls));
  const sockets = new Set<Socket>();
  const connects: string[] = [];
  let refused = 0;
  let cut = 0;
  const expected = options.credentials === undefined
    ? undefined
    : `Basic ${Buffer.from(`${options.credentials.user}:${options.credentials.password}`).toString('base64')}`;
  if (expected !== undefined) {
    server.authenticate = (req) => {
      const ok = req.headers['proxy-authorization'] === expected;
      if (!ok && req.method === 'CONNECT') refused += 1;
      return ok;
    };
  }
  server.on(options.tls === undefined ? 'connection' : 'secureConnection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  // First in line: logs the target as asked, then points it where the proxy resolves it.
  server.prependListener('connect', (req: IncomingMessage) => {
    connects.push(req.url ?? '');
    const [host, port] = splitTarget(req.url ?? '');
    const mapped = options.hosts?.[host];
    if (mapped !== undefined) req.url = `${mapped}:${port}`;
  });

  if (options.cutAnswersToRequestsOver !== undefined) {
    const threshold = options.cutAnswersToRequestsOver;
    // Our own CONNECT handling in this mode: the package's pipes both ways with no say in between.
    const packaged = server.listeners('connect').filter((l) => l.name === 'onconnect');
    for (const listener of packaged) server.off('connect', listener as (...args: unknown[]) => void);
    server.on('connect', (req: IncomingMessage, client: Socket) => {
      if (expected !== undefined && req.headers['proxy-authorization'] !== expected) {
        refused += 1;
        client.end('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="proxy"\r\nContent-Length: 0\r\n\r\n');
        return;
      }
      const [host, port] = splitTarget(req.url ?? '');
      const target = connect({ host, port });
      sockets.add(target);
      target.on('close', () => sockets.delete(target));
      let flight = 0;
      target.on('connect', () => {
        client.write('HTTP/1.1 200 Connection established\r\n\r\n');
        client.on('data', (chunk: Buffer) => {
          flight += chunk.length;
          target.write(chunk);
        });
        target.on('data', (chunk: Buffer) => {
          if (flight >= threshold) {
            cut += 1;
            client.destroy();
            target.destroy();
            return;
          }
          flight = 0;
          client.write(chunk);
        });
      });
      const end = (): void => {
        client.destroy();
        target.destroy();
      };
      target.on('error', end);
      target.on('end', end);
      client.on('error', end);
      client.on('end', end);
    });
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const scheme = options.tls === undefined ? 'http' : 'https';
  const url = `${scheme}://127.0.0.1:${port}`;
  return {
    url,
    urlWith: (user, password) => `${scheme}://${encodeURIComponent(user)}:${encodeURIComponent(password)}@127.0.0.1:${port}`,
    connects,
    get refused() {
      return refused;
    },
    get cut() {
      return cut;
    },
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const socket of sockets) socket.destroy();
    }),
  };
}

function splitTarget(target: string): [string, number] {
  const colon = target.lastIndexOf(':');
  return [target.slice(0, colon).replace(/^\[|\]$/g, ''), Number(target.slice(colon + 1))];
}
