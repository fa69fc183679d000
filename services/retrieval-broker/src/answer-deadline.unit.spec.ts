import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { isGovernedMemoryError } from '@gm/contracts';
import { answerWithin } from './answer-deadline.ts';

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

/** A route whose dependency hangs, one that answers at once, and one that answers after the deadline passed. */
async function appWithDeadline(ms: number): Promise<{ app: FastifyInstance; lateAnswered: Promise<void> }> {
  const server = Fastify();
  // What the app's error handler does with a coded error (app.ts): its status, and Retry-After when retriable.
  const seen: unknown[] = [];
  server.setErrorHandler((err, _request, reply) => {
    seen.push(err);
    if (!isGovernedMemoryError(err)) return reply.code(500).send({ code: 'unexpected' });
    if (err.retriable) reply.header('retry-after', '1');
    return reply.code(503).send({ code: err.code });
  });
  answerWithin(server, ms);
  let lateDone: () => void = () => undefined;
  const lateAnswered = new Promise<void>((resolve) => (lateDone = resolve));
  server.get('/hangs', () => new Promise(() => undefined));
  server.get('/quick', async () => ({ ok: true }));
  server.get('/late', async () => {
    await new Promise((resolve) => setTimeout(resolve, ms * 3));
    setImmediate(lateDone);
    return { ok: 'late' };
  });
  await server.ready();
  app = server;
  return { app: server, lateAnswered };
}

describe('every request answered within MEMORY_REQUEST_TIMEOUT', () => {
  it('answers a request whose work hangs with a retriable MEM_TIMEOUT', async () => {
    const { app } = await appWithDeadline(100);
    const res = await app.inject({ method: 'GET', url: '/hangs' });
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.json()).toEqual({ code: 'MEM_TIMEOUT' });
  });

  it('leaves an answer in time alone', async () => {
    const { app } = await appWithDeadline(1_000);
    const res = await app.inject({ method: 'GET', url: '/quick' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ ok: true });
  });

  it('sends one answer when the work finishes after the deadline, and the server goes on serving', async () => {
    const { app, lateAnswered } = await appWithDeadline(100);
    const res = await app.inject({ method: 'GET', url: '/late' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ code: 'MEM_TIMEOUT' });
    await lateAnswered;
    const next = await app.inject({ method: 'GET', url: '/quick' });
    expect(next.statusCode).toBe(200);
  });
});
