/**
 * A partner on its worst day, for the test suite: a loopback proxy in front of a real sandbox that
 * forwards each request, or answers it itself the way real gateways misbehave — a 200 with an error
 * inside, a 404 from a misrouted load balancer, redirects, 429s with odd `Retry-After` values,
 * bodies of any size, cut answers, resets, or nothing at all. A script decides per request.
 *
 * It records what it saw (requests per operation, each lead's key, headers), so that tests can
 * assert the ledger's states, the exit code, and that no lead reached the partner twice. Everything
 * is bounded: a hung request ends when the proxy closes, a big body is generated, not buffered.
 */
import { createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** How `forward-then-echo-key` echoes the key: the forms the redactor must take out of an answer. */
export type EchoForm = 'raw' | 'json-escaped' | 'url-encoded' | 'hex-spaced' | 'base64-lower-case' | 'url-encoded-twice' | 'html-escaped' | 'utf16-hex' | 'all';

export type Operation = 'validate' | 'quote' | 'lead';

/** What the proxy does with one request. */
export type Behaviour =
  /** Forward to the sandbox and relay its answer (the default). */
  | { kind: 'forward' }
  /** Answer without forwarding (the partner did nothing). */
  | { kind: 'answer'; status: number; body?: string; headers?: Record<string, string> }
  /** Forward, then answer this instead of the sandbox's answer (the partner did the work). */
  | { kind: 'forward-then-answer'; status: number; body?: string; headers?: Record<string, string> }
  /** Forward (the partner did the work), then drop the connection / never answer / cut the answer. */
  | { kind: 'forward-then'; then: 'reset' | 'hang' | 'cut' }
  /** Drop the connection without forwarding (after the body arrived). */
  | { kind: 'reset' }
  /** Never answer, without forwarding. */
  | { kind: 'hang' }
  /** Forward, then answer with the sandbox's status and a body of `bytes` bytes (generated as it is written). */
  | { kind: 'forward-then-big'; bytes: number }
  /** Forward, then add the API key (as the partner received it) to the answer, in the given form. */
  | { kind: 'forward-then-echo-key'; form: EchoForm }
  /**
   * Forward (the partner did the work), then answer with the sandbox's status and a body that
   * cannot be decoded: plain JSON labelled `Content-Encoding: gzip` or `deflate`, or labelled with
   * a charset nobody knows.
   */
  | { kind: 'forward-then-garbled'; how: 'gzip' | 'deflate' | 'charset' };

export interface RequestInfo {
  operation: Operation;
  /** 1-based count of this operation's requests, this one included. */
  n: number;
  body: string;
  headers: IncomingHttpHeaders;
  /** For quote and lead: the lead's key (`tracking.click_id`, else `channel.channel_lead_id`). */
  leadKey: string | undefined;
}

export type Script = (request: RequestInfo) => Behaviour;

export interface MisbehavingPartner {
  readonly url: string;
  /** Requests received per operation (answered or not). */
  readonly received: Record<Operation, number>;
  /** How many quote/lead requests carried each lead key (`tracking.click_id`, else `channel.channel_lead_id`). */
  readonly leadKeys: Map<string, number>;
  /** Every request's operation and parsed body, in arrival order. */
  readonly requests: { operation: Operation; body: unknown; headers: IncomingHttpHeaders }[];
  /** Lead keys that reached the partner more than once. */
  duplicateLeads(): string[];
  /** Replaces the script (e.g. the partner recovers). */
  setScript(script: Script): void;
  close(): Promise<void>;
}

const PATHS: Readonly<Record<string, Operation>> = {
  '/account/v1/agent/validate': 'validate',
  '/partner/v2/policy/quote': 'quote',
  '/partner/v2/policy/lead': 'lead',
};

export async function startMisbehavingPartner(upstreamUrl: string, script: Script = () => ({ kind: 'forward' })): Promise<MisbehavingPartner> {
  const upstream = new URL(upstreamUrl);
  let current = script;
  const received: Record<Operation, number> = { validate: 0, quote: 0, lead: 0 };
  const leadKeys = new Map<string, number>();
  const requests: MisbehavingPartner['requests'] = [];
  const sockets = new Set<Socket>();

  const forward = (path: string, headers: IncomingHttpHeaders, body: string): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> =>
    new Promise((resolve, reject) => {
      const req = httpRequest(
        { hostname: upstream.hostname, port: upstream.port, path, method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': headers['x-api-key'] ?? '' } },
        (res: IncomingMessage) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });

  const send = (res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void => {
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers });
    res.end(body);
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const path = (req.url ?? '/').split('?')[0] ?? '/';
        const operation = PATHS[path];
        if (operation === undefined) {
          send(res, 404, '{"message":"no route"}');
          return;
        }
        const body = Buffer.concat(chunks).toString('utf8');
        received[operation] += 1;
        let parsed: unknown;
        try {
          parsed = JSON.parse(body);
        } catch {
          parsed = body;
        }
        requests.push({ operation, body: parsed, headers: req.headers });
        const leadKey = operation === 'validate' ? undefined : leadKeyOf(parsed);
        const behaviour = current({ operation, n: received[operation], body, headers: req.headers, leadKey });
        const forwards = behaviour.kind === 'forward' || behaviour.kind.startsWith('forward-then');
        if (forwards && leadKey !== undefined) leadKeys.set(leadKey, (leadKeys.get(leadKey) ?? 0) + 1);
        switch (behaviour.kind) {
          case 'answer':
            send(res, behaviour.status, behaviour.body ?? '', behaviour.headers);
            return;
          case 'reset':
            req.socket.resetAndDestroy();
            return;
          case 'hang':
            return;
          default:
            break;
        }
        const answer = await forward(path, req.headers, body);
        switch (behaviour.kind) {
          case 'forward':
            send(res, answer.status, answer.body);
            return;
          case 'forward-then-answer':
            send(res, behaviour.status, behaviour.body ?? '', behaviour.headers);
            return;
          case 'forward-then':
            if (behaviour.then === 'reset') req.socket.resetAndDestroy();
            if (behaviour.then === 'cut') {
              res.writeHead(answer.status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(answer.body) + 100) });
              res.write(answer.body.slice(0, Math.floor(answer.body.length / 2)));
              setTimeout(() => req.socket.destroy(), 20);
            }
            return;
          case 'forward-then-big':
            writeBig(res, answer.status, behaviour.bytes);
            return;
          case 'forward-then-garbled':
            send(res, answer.status, answer.body, behaviour.how === 'charset'
              ? { 'content-type': 'application/json; charset=x-klingon' }
              : { 'content-encoding': behaviour.how });
            return;
          case 'forward-then-echo-key': {
            const key = String(req.headers['x-api-key'] ?? '');
            const forms = {
              raw: key,
              'json-escaped': [...key].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join(''),
              'url-encoded': [...Buffer.from(key)].map((b) => `%${b.toString(16).padStart(2, '0')}`).join(''),
              'hex-spaced': [...Buffer.from(key)].map((b) => b.toString(16).padStart(2, '0').toUpperCase()).join(' '),
              'base64-lower-case': Buffer.from(key.toLowerCase()).toString('base64'),
              'url-encoded-twice': encodeURIComponent([...Buffer.from(key)].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')),
              // As an HTML encoder that escapes every character writes it (e-mail obfuscation, some WAF pages).
              'html-escaped': [...key].map((c) => `&#${c.charCodeAt(0)};`).join(''),
              'utf16-hex': [...key].map((c) => c.charCodeAt(0).toString(16).padStart(4, '0')).join(''),
            };
            const echoed = behaviour.form === 'all' ? Object.values(forms).join(' ') : forms[behaviour.form];
            // Into the answer's message and a field of its own, as a debugging gateway would.
            const text = answer.body.replace(/"message":"/, `"message":"key ${echoed} `).replace(/^\{/, `{"debug_key":"${echoed}",`);
            send(res, answer.status, text);
            return;
          }
        }
      })().catch(() => {
        if (!res.headersSent) send(res, 502, '{"message":"proxy error"}');
      });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('clientError', (_error, socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    leadKeys,
    requests,
    duplicateLeads: () => [...leadKeys].filter(([, n]) => n > 1).map(([k]) => k),
    setScript: (next) => {
      current = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        for (const socket of sockets) socket.destroy();
      }),
  };
}

/** Writes `bytes` of a JSON-looking body in 64 KiB chunks, respecting back-pressure. */
function writeBig(res: ServerResponse, status: number, bytes: number): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(bytes) });
  const head = Buffer.from('{"status":"success","padding":"');
  const tail = Buffer.from('"}');
  const chunk = Buffer.alloc(64 * 1024, 'x');
  let left = bytes - head.length - tail.length;
  res.write(head);
  const pump = (): void => {
    while (left > 0) {
      const piece = left >= chunk.length ? chunk : chunk.subarray(0, left);
      left -= piece.length;
      if (!res.write(piece)) {
        res.once('drain', pump);
        return;
      }
    }
    res.end(tail);
  };
  res.on('close', () => {
    left = 0;
  });
  pump();
}

function leadKeyOf(body: unknown): string | undefined {
  if (body === null || typeof body !== 'object') return undefined;
  const root = body as { tracking?: { click_id?: unknown }; channel?: { channel_lead_id?: unknown } };
  const click = root.tracking?.click_id;
  if (typeof click === 'string' && click !== '') return click;
  const lead = root.channel?.channel_lead_id;
  return typeof lead === 'string' && lead !== '' ? lead : undefined;
}
