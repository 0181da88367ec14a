/** A PostgreSQL server started by {@link startPostgres}. */
export interface EmbeddedServer {
  /** The superuser's connection string to `database` (default `postgres`). */
  url(database?: string): string;
  readonly port: number;
  /** The server's process id (for SIGSTOP / SIGKILL in fault tests). */
  readonly pid: number | null;
  /** Stops it (a fast shutdown); its data stay for {@link EmbeddedServer.start}. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops it and removes its data. */
  destroy(): Promise<void>;
}
export const TEST_PG_PASSWORD: string;
export function freePort(): Promise<number>;
/** Starts a PostgreSQL server of its own on a free loopback port (a few seconds). */
export function startPostgres(): Promise<EmbeddedServer>;
