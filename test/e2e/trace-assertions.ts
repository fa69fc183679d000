import { expect } from 'vitest';

/** Written content no span may carry, in any attribute (docs/operations.md#traces). */
export const CONTENT_PROBE = 'Prefers invoices by registered mail to Quillfeather Lane 7';

/** A span as both the in-memory exporter and Jaeger's API describe it. */
export interface SpanView {
  name: string;
  /** The service that recorded it (Jaeger's process; the in-memory exporter has one process). */
  service?: string;
  traceId: string;
  spanId: string;
  parentId: string | undefined;
  attributes: Record<string, unknown>;
}

/** The groups whose handling of one synchronous write must be in its trace, each under write-admission's. */
const EVENT_GROUPS = ['projector', 'index-builder', 'summary-builder', 'vector-indexer'];

/**
 * One write's trace: the API's send of the command is the parent of write-admission's handling
 * of it, whose span is the parent of each group's handling of the events it decided. Returns the
 * trace's spans.
 */
export function expectOneWriteTrace(spans: readonly SpanView[]): SpanView[] {
  const sends = spans.filter((s) => s.name === 'send memory.commands' && s.attributes['gm.message.type'] === 'WriteMemory');
  expect(sends, 'one send of the WriteMemory command').toHaveLength(1);
  const send = sends[0]!;
  const trace = spans.filter((s) => s.traceId === send.traceId);
  const admission = trace.filter((s) => s.attributes['messaging.consumer.group.name'] === 'write-admission');
  expect(admission, 'write-admission handled the command once').toHaveLength(1);
  expect(admission[0]!.parentId).toBe(send.spanId);
  expect(admission[0]!.attributes['gm.message.type']).toBe('WriteMemory');
  for (const group of EVENT_GROUPS) {
    const handled = trace.filter((s) => s.attributes['messaging.consumer.group.name'] === group && s.name === 'process memory.events');
    expect(handled.length, `${group} in the write's trace`).toBeGreaterThan(0);
    for (const span of handled) {
      expect(span.parentId, `${group}'s parent`).toBe(admission[0]!.spanId);
      expect(span.attributes['gm.message.type']).toMatch(/^Memory[A-Za-z]+$/);
    }
  }
  // Ids and decisions only: no attribute of any span of the run holds the content or a piece of it.
  for (const span of spans) {
    for (const [key, value] of Object.entries(span.attributes)) {
      expect(String(value), `${span.name} ${key}`).not.toContain('Quillfeather');
    }
  }
  return trace;
}
