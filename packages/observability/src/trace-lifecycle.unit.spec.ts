import { describe, expect, it } from 'vitest';
import { tracingRequested } from './trace-lifecycle.ts';

/** Traces are off unless the standard OTEL_* variables ask for them (docs/operations.md#traces). */
describe('tracingRequested', () => {
  it.each([
    [{}, false],
    [{ OTEL_TRACES_EXPORTER: 'none' }, false],
    [{ OTEL_TRACES_EXPORTER: 'otlp' }, true],
    [{ OTEL_TRACES_EXPORTER: 'console' }, true],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, true],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }, true],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' }, false],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' }, false],
    // Metrics or logs alone do not turn traces on.
    [{ OTEL_METRICS_EXPORTER: 'otlp' }, false],
  ])('%j → %s', (env, expected) => {
    expect(tracingRequested(env)).toBe(expected);
  });
});
