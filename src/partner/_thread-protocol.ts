/**
 * What the partner client's main thread (`thread-transport.ts`) and its HTTP thread
 * (`_transport-thread.ts`) say to each other: a file of its own, so that neither imports the other.
 */
import type { RawAttempt, TransportOptions } from './_transport.js';

/** The code of a request lost with its thread, or that the thread could not make. */
export const THREAD_LOST = 'ERR_HTTP_THREAD';

/** What the main thread posts: the transport's options once, then one request at a time. */
export type ThreadMessage =
  | { type: 'configure'; options: TransportOptions }
  | { type: 'post'; id: number; url: string; payload: string };

/** What the thread posts back: that it is ready (got loaded, listening), then one answer per request. */
export type ThreadReply = { type: 'ready' } | { type: 'answer'; id: number; raw: RawAttempt };
