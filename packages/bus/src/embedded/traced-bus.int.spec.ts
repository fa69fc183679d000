import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import { shutdownTracing } from '@gm/observability';
import { startTracing } from '@gm/observability/tracing';
import { createSqliteBus } from './sqlite-bus.ts';
import type { Bus, ConsumedMessage } from '../port.ts';
import { tracedBus, withMessageContext } from '../tracing.ts';

/**
 * tracedBus on the embedded log (docs/operations.md#traces): a message's handling continues the
 * trace its headers carry, and what a handler sends, per message of a batch too, continues the
 * handling's span. The SDK runs with the in-memory exporter.
 */
describe('tracedBus', () => {
  const exporter = new InMemorySpanExporter();
  let raw: Bus;
  let dir: string;
  beforeAll(async () => {
    startTracing({ serviceName: 'bus-spec', spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    dir = mkdtempSync(path.join(os.tmpdir(), 'gm-traced-'));
    raw = createSqliteBus({ file: path.join(dir, 'bus.db'), pollIntervalMs: 5 });
    await raw.ensureTopics([{ name: 'memory.commands', partitions: 1 }, { name: 'out', partitions: 1 }]);
  });
  afterAll(async () => {
    await raw.close();
    rmSync(dir, { recursive: true, force: true });
    await shutdownTracing();
  });

  const platformTrace = (n: number) => `00-${String(n).padStart(32, 'a')}-${String(n).padStart(16, 'b')}-01`;
  const traceIdOf = (traceparent: string | undefined) => traceparent?.split('-')[1];
  const parentIdOf = (traceparent: string | undefined) => traceparent?.split('-')[2];

  async function outputs(count: number): Promise<ConsumedMessage[]> {
    const seen: ConsumedMessage[] = [];
    for await (const message of raw.readPartition('out', 0, 0)) seen.push(message);
    expect(seen).toHaveLength(count);
    return seen;
  }

  it("continues each message's trace through a batch handler's per-message sends, with one span per message under its own parent", async () => {
    const bus = tracedBus(raw, 'gm_log');
    // Two requests from a platform, each in a trace of its own, handled in one batch.
    // Caller-chosen baggage and tracestate ride along: neither may go further (docs/operations.md#traces).
    await raw.produce([1, 2].map((n) => ({
      topic: 'memory.commands', key: 'k', value: { type: 'WriteMemory', secret: 'never-an-attribute' },
      headers: { traceparent: platformTrace(n), tracestate: 'vendor=opaque', baggage: 'user.email=alice@example.com' },
    })));
    const done = Promise.withResolvers<void>();
    const sub = await bus.subscribe({
      groupId: 'batcher', topics: ['memory.commands'],
      batchHandler: async (messages, ctx) => {
        for (const message of messages) withMessageContext(message, () => ctx.send([{ topic: 'out', key: message.key, value: message.offset }]));
        ctx.onCommitted(() => done.resolve());
      },
    });
    await done.promise;
    await sub.close();
    // The SDK exports a span once its resource is known: asynchronously.
    const batcherSpans = () => exporter.getFinishedSpans().filter((s) => s.attributes['messaging.consumer.group.name'] === 'batcher');
    await expect.poll(() => batcherSpans().length).toBe(2);
    const spans = batcherSpans();
    const sent = await outputs(2);
    for (const [i, n] of [1, 2].entries()) {
      const span = spans.find((s) => s.spanContext().traceId === traceIdOf(platformTrace(n)));
      // The handling's parent is the platform's span; the output's parent is the handling.
      expect(span?.parentSpanContext?.spanId).toBe(parentIdOf(platformTrace(n)));
      expect(span?.name).toBe('process memory.commands');
      expect(span?.attributes['gm.message.type']).toBe('WriteMemory');
      expect(traceIdOf(sent[i]?.headers.traceparent)).toBe(traceIdOf(platformTrace(n)));
      expect(parentIdOf(sent[i]?.headers.traceparent)).toBe(span?.spanContext().spanId);
      expect(Object.keys(sent[i]?.headers ?? {})).toEqual(['traceparent']);
      // Ids and decisions: nothing of the value but its type.
      expect(JSON.stringify(span?.attributes)).not.toContain('never-an-attribute');
    }
  });

  it('starts a trace of its own for a malformed or all-zero traceparent', async () => {
    const bus = tracedBus(raw, 'gm_log');
    exporter.reset();
    const bad = ['garbage', `00-${'0'.repeat(32)}-${'b'.repeat(16)}-01`, `ff-${'a'.repeat(32)}-${'b'.repeat(16)}-01`, `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01-extra`];
    const positions = await raw.produce(bad.map((traceparent, i) => ({ topic: 'memory.commands', key: `bad-${i}`, value: { type: 'WriteMemory' }, headers: { traceparent } })));
    const offsets = new Set(positions.map((p) => p.offset));
    const seen = Promise.withResolvers<void>();
    let count = 0;
    const sub = await bus.subscribe({
      groupId: 'malformed', topics: ['memory.commands'],
      handler: async (message) => {
        if (message.key.startsWith('bad-') && (count += 1) === bad.length) seen.resolve();
      },
    });
    await seen.promise;
    await sub.close();
    const spans = () => exporter.getFinishedSpans()
      .filter((s) => s.attributes['messaging.consumer.group.name'] === 'malformed' && offsets.has(s.attributes['messaging.kafka.offset'] as number));
    await expect.poll(() => spans().length).toBe(bad.length);
    for (const span of spans()) {
      expect(span.parentSpanContext?.spanId).toBeUndefined();
      expect(span.spanContext().traceId).not.toBe('a'.repeat(32));
    }
  });

  it('records a failed handling as an error span with the error code, never its message, and keeps a header a sender set itself', async () => {
    const bus = tracedBus(raw, 'gm_log');
    exporter.reset();
    const own = platformTrace(3);
    const [sent] = await bus.produce([{ topic: 'memory.commands', key: 'k2', value: { type: 'DeleteMemory' }, headers: { traceparent: own } }]);
    expect(sent).toBeDefined();
    await expect.poll(() => exporter.getFinishedSpans().find((s) => s.name === 'send memory.commands')?.attributes['gm.message.type']).toBe('DeleteMemory');
    let attempts = 0;
    const failed = Promise.withResolvers<void>();
    const sub = await bus.subscribe({
      groupId: 'failing', topics: ['memory.commands'], fromBeginning: true, maxAttempts: 1,
      handler: async (message) => {
        if (message.key !== 'k2') return;
        attempts += 1;
        failed.resolve();
        throw Object.assign(new Error('the secret content was bad'), { code: 'MEM_VALIDATION' });
      },
    });
    await failed.promise;
    await expect.poll(() => exporter.getFinishedSpans().filter((s) => s.attributes['messaging.consumer.group.name'] === 'failing' && s.status.code === 2).length).toBe(1);
    await sub.close();
    const span = exporter.getFinishedSpans().find((s) => s.attributes['messaging.consumer.group.name'] === 'failing' && s.status.code === 2);
    expect(span?.status.message).toBe('MEM_VALIDATION');
    expect(span?.spanContext().traceId).toBe(traceIdOf(own));
    expect(attempts).toBe(1);
  });
});
