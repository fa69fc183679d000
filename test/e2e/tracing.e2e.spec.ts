import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { shutdownTracing } from '@gm/observability';
import { startTracing } from '@gm/observability/tracing';
import { memory, startTestRuntime, type EmbeddedTestRuntime } from './harness.ts';
import { CONTENT_PROBE, expectOneWriteTrace } from './trace-assertions.ts';

/**
 * Traces on the embedded runtime (docs/operations.md#traces), against the SDK's in-memory
 * exporter: one synchronous write is one trace from the API's send through write-admission to
 * every group that folds its events, parent to child, and no span attribute holds its content.
 * The services run in this thread (MEMORY_PIPELINE=inline): the exporter sees every span.
 */
describe('traces of one write (embedded, in-memory exporter)', () => {
  const exporter = new InMemorySpanExporter();
  let rt: EmbeddedTestRuntime;

  beforeAll(async () => {
    startTracing({ serviceName: 'governed-memory', spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    rt = await startTestRuntime({ MEMORY_PIPELINE: 'inline', MEMORY_SEMANTIC: 'on' });
  });
  afterAll(async () => {
    await rt?.close();
    await shutdownTracing();
  });

  it('links the API, write-admission, the projector, the index-builder, the summary-builder and the vector-indexer in one trace, with ids and decisions only', async () => {
    const writer = await rt.issue({ agentId: 'trace-bot' });
    exporter.reset();
    const written = await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id: 'traced-1', subjectId: 'subj-traced', content: CONTENT_PROBE }) });
    expect(written.status).toBe(201);
    // The vectors and summaries follow the write: their spans end after the answer.
    await expect.poll(() => groupsIn(exporter.getFinishedSpans()), { timeout: 30_000 })
      .toEqual(expect.arrayContaining(['write-admission', 'projector', 'index-builder', 'summary-builder', 'vector-indexer']));
    expectOneWriteTrace(exporter.getFinishedSpans().map((s) => ({
      name: s.name, traceId: s.spanContext().traceId, spanId: s.spanContext().spanId, parentId: s.parentSpanContext?.spanId, attributes: s.attributes,
    })));
  }, 60_000);
});

const groupsIn = (spans: readonly ReadableSpan[]) => [...new Set(spans.map((s) => s.attributes['messaging.consumer.group.name']).filter((g) => typeof g === 'string'))];
