/**
 * OpenTelemetry traces (docs/operations.md#traces), configured by the standard `OTEL_*`
 * variables and off unless asked: `OTEL_TRACES_EXPORTER` other than `none`, or an
 * `OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT`, turns them on; `OTEL_SDK_DISABLED=true` keeps them off.
 * This module is what every process loads; the SDK itself (tracing.ts) only where asked.
 */
export function tracingRequested(env: Record<string, string | undefined>): boolean {
  if (env.OTEL_SDK_DISABLED === 'true') return false;
  const exporter = env.OTEL_TRACES_EXPORTER?.trim();
  if (exporter !== undefined && exporter !== '') return exporter !== 'none';
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

let shutdown: (() => Promise<void>) | undefined;

/** Registers how the running SDK flushes and stops (tracing.ts). */
export function onTracingShutdown(fn: () => Promise<void>): void {
  shutdown = fn;
}

export const tracingStarted = (): boolean => shutdown !== undefined;

/** Exports what is still buffered and stops the SDK; nothing when tracing is off. A stopping process calls it before it exits. */
export async function shutdownTracing(): Promise<void> {
  const stop = shutdown;
  shutdown = undefined;
  await stop?.();
}
