/**
 * The entry of the HTTP thread (see `thread-transport.ts`): one got {@link Transport}, configured by
 * the first message and then fed `post` messages (URL and body), each answered with its `RawAttempt`,
 * its body redacted. It holds no policy: retries, the breaker and the limiter stay with the client
 * on the main thread, which reads each `RawAttempt`. It says `ready` once it listens: a thread that
 * dies before that cannot have sent anything. Loading this module loads got: that is what a spare thread does
 * while it waits for its client.
 */
import { parentPort } from 'node:worker_threads';
import { describeTransportError, Transport, type RawAttempt } from './_transport.js';
import { networkSecrets, Redactor } from './redact.js';
import { THREAD_LOST, type ThreadMessage, type ThreadReply } from './_thread-protocol.js';

const port = parentPort;
if (port === null) throw new Error('_transport-thread.js runs as a worker thread of the partner client');

let transport: Transport | undefined;
/**
 * Answers are redacted here, before they cross to the main thread: the key never reaches it in an
 * answer, and the main thread, which every answer waits for, does not spend the time.
 */
let redactor: Redactor | undefined;
/** Why the transport could not be made, when it could not. */
let unusable: string | undefined;
/** The client posts to three URLs: each is parsed once. */
const urls = new Map<string, URL>();
const answer = (id: number, raw: RawAttempt): void => {
  const clean: RawAttempt = raw.type === 'response' && redactor !== undefined
    ? { ...raw, text: redactor.redact(raw.text), redacted: true, ...(raw.rateLimit === undefined ? {} : { rateLimit: redactHeaders(raw.rateLimit, redactor) }) }
    : raw;
  port.postMessage({ type: 'answer', id, raw: clean } satisfies ThreadReply);
};
/** A gateway's headers are numbers and names; redacted all the same, as every text from the partner is. */
function redactHeaders(headers: Record<string, string>, by: Redactor): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, by.redact(value)]));
}
const refused = (detail: string): RawAttempt => ({ type: 'transport', code: THREAD_LOST, detail, bodySent: false });

port.on('message', (message: ThreadMessage) => {
  if (message.type === 'configure') {
    redactor = new Redactor(message.options.apiKey, networkSecrets(message.options.network));
    try {
      transport = new Transport(message.options);
    } catch (error) {
      // A TLS context that cannot be made (the main thread checked it first): every request is refused, unsent.
      unusable = `the HTTP thread cannot use its TLS settings: ${redactor.redact(error instanceof Error ? error.message : String(error)).slice(0, 200)}`;
    }
    return;
  }
  const { id } = message;
  // Nothing leaves on a request the thread cannot make: it is answered, and the thread lives on.
  if (transport === undefined) return answer(id, refused(unusable ?? 'the HTTP thread was sent a request before its options'));
  let url = urls.get(message.url);
  if (url === undefined) {
    try {
      url = new URL(message.url);
    } catch {
      return answer(id, refused('the HTTP thread was sent an invalid URL'));
    }
    urls.set(message.url, url);
  }
  // A request got refuses before sending (it throws) never left: describeTransportError says so.
  transport.post(url, message.payload)
    .catch((error: unknown) => describeTransportError(error))
    .then((raw) => answer(id, raw))
    .catch(() => answer(id, refused('the HTTP thread could not pass the answer back')));
});

port.postMessage({ type: 'ready' } satisfies ThreadReply);
