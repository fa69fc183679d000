/**
 * `node --import ./packages/observability/src/register-tracing.ts <entry>`: starts tracing
 * before the entry's modules load, when the `OTEL_*` variables ask for it (tracing.ts), so the
 * HTTP and ioredis instrumentations can hook the modules as they are imported
 * (import-in-the-middle). Without those variables it does nothing. Every command the chart,
 * docker-compose and the local launcher run passes it.
 */
import { register } from 'node:module';
import { tracingRequested } from './trace-lifecycle.ts';
import { serviceNameOf, startTracing } from './tracing.ts';

if (tracingRequested(process.env)) {
  register('import-in-the-middle/hook.mjs', import.meta.url);
  startTracing({ serviceName: serviceNameOf(process.argv[1]) });
}
