/**
 * The entry of the HTTP thread (see `_thread-transport.ts`): one got {@link Transport}, fed with
 * `{ id, url, payload }` messages and answering `{ id, raw }`. It holds no policy: retries, the
 * breaker and the limiter stay with the client on the main thread, which reads each `RawAttempt`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { describeTransportError, Transport, type TransportOptions } from './_transport.js';

export interface PostMessage {
  id: number;
  url: string;
  payload: string;
}

const port = parentPort;
if (port === null) throw new Error('_transport-thread.js runs as a worker thread of the partner client');

const transport = new Transport(workerData as TransportOptions);
/** The client posts to three URLs: parse each once. */
const urls = new Map<string, URL>();

port.on('message', (message: PostMessage) => {
  let url = urls.get(message.url);
  if (url === undefined) {
    url = new URL(message.url);
    urls.set(message.url, url);
  }
  // A request got refuses before sending (it throws) never left: describeTransportError says so.
  transport.post(url, message.payload)
    .catch((error: unknown) => describeTransportError(error))
    .then((raw) => port.postMessage({ id: message.id, raw }), () => {});
});
