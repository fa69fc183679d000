import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a stranger received, whole: what a client sent to an address it should not have trusted. */
export interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface Stranger {
  url: string;
  port: number;
  received: Received[];
  /** Whether any request carried `secret` anywhere: the request line, a header or the body. */
  saw(secret: string): boolean;
  close(): Promise<void>;
}

/** What the stranger answers; the default is a plain server that is not ours (404 to everything). */
export type StrangerAnswer = (request: Received) => Promise<{ status: number; headers?: Record<string, string>; body: string }>;

const notOurs: StrangerAnswer = async () => ({ status: 404, headers: { 'content-type': 'text/plain' }, body: 'not found' });

/**
 * An HTTP server of someone else's on a free loopback port, recording every request: the
 * process a client must not send a credential to when nobody configured its address (design §9.2).
 */
export async function startStranger(answer: StrangerAnswer = notOurs): Promise<Stranger> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      received.push(request);
      answer(request).then(
        (a) => res.writeHead(a.status, a.headers).end(a.body),
        () => res.writeHead(502).end(),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    received,
    saw: (secret) => received.some((r) => `${r.url}\n${JSON.stringify(r.headers)}\n${r.body}`.includes(secret)),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A stranger that passes every request on to `target` and its answer back: a relay of the genuine runtime. */
export const relayTo = (target: string): StrangerAnswer => async (request) => {
  const headers = Object.fromEntries(Object.entries(request.headers).filter((e): e is [string, string] => typeof e[1] === 'string' && !['host', 'connection', 'content-length'].includes(e[0])));
  const response = await fetch(`${target}${request.url}`, { method: request.method, headers, ...(request.body === '' ? {} : { body: request.body }) });
  return { status: response.status, headers: { 'content-type': response.headers.get('content-type') ?? 'application/octet-stream' }, body: await response.text() };
};
