/**
 * The entry of the HTTP thread (see `thread-transport.ts`): one got {@link Transport}, configured by
 * the first message and then fed `{ id, url, payload }` messages, each answered `{ id, raw }`. It
 * holds no policy: retries, the breaker and the limiter stay with the client on the main thread,
 * which reads each `RawAttempt`. Loading this module loads got: that is what a spare thread does
 * while it waits for its client.
 */
import { parentPort } from 'node:worker_threads';
import { describeTransportError, Transport, type TransportOptions } from './_transport.js';

export type ThreadMessage =
  | { type: 'configure'; options: TransportOptions }
  | { type: 'post'; id: number; url: string; payload: string };

const port = parentPort;
if (port === null) throw new Error('_transport-thread.js runs as a worker thread of the partner client');

let transport: Transport | undefined;
/** The client posts to three URLs: each is parsed once. */
const urls = new Map<string, URL>();

port.on('message', (message: ThreadMessage) => {
  if (message.type === 'configure') {
    transport = new Transport(message.options);
    return;
  }
  const { id } = message;
  let url = urls.get(message.url);
  if (url === undefined) {
    url = new URL(message.url);
    urls.set(message.url, url);
  }
  if (transport === undefined) throw new Error('the HTTP thread was sent a request before its options');
  // A request got refuses before sending (it throws) never left: describeTransportError says so.
  transport.post(url, message.payload)
    .catch((error: unknown) => describeTransportError(error))
    .then((raw) => port.postMessage({ id, raw }), () => {});
});
