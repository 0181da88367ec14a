/**
 * A misbehaving way to the PostgreSQL server, for the ledger's fault tests (loopback, bounded): a
 * TCP relay that can cut a connection right after it passed a `COMMIT` on to the server (the
 * transaction commits; the client never hears so), or stall every connection for a while.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface PgProxy {
  readonly port: number;
  /** COMMITs relayed so far, and connections cut after one. */
  readonly commits: number;
  readonly cut: number;
  /** Cut the connection right after relaying the `n`th COMMIT from now (1: the next one). */
  cutAfterCommit(n: number): void;
  /** Cuts every connection now (the client sees them reset). */
  cutAll(): void;
  close(): Promise<void>;
}

const COMMIT = Buffer.from('COMMIT\0');

export async function startPgProxy(target: { host: string; port: number }): Promise<PgProxy> {
  const pairs = new Set<[Socket, Socket]>();
  let commits = 0;
  let cut = 0;
  let cutAt: number | null = null;
  const server: Server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const end = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    client.on('data', (chunk: Buffer) => {
      const isCommit = chunk.includes(COMMIT);
      upstream.write(chunk, () => {
        if (!isCommit) return;
        commits += 1;
        if (cutAt !== null && commits >= cutAt) {
          cutAt = null;
          cut += 1;
          // Relayed: the server commits. The client's side is reset before any answer reaches it.
          client.resetAndDestroy();
        }
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    port,
    get commits() {
      return commits;
    },
    get cut() {
      return cut;
    },
    cutAfterCommit: (n) => {
      cutAt = commits + n;
    },
    cutAll: () => {
      for (const [client, upstream] of pairs) {
        client.resetAndDestroy();
        upstream.destroy();
      }
    },
    close: () => new Promise<void>((resolve) => {
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream.destroy();
      }
      server.close(() => resolve());
    }),
  };
}
