import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, context, isSpanContextValid, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import { TOPICS } from '@gm/contracts';
import type { BatchHandler, Bus, ConsumedMessage, MessageHandler, OutgoingMessage, ProcessContext } from './port.ts';

/**
 * W3C trace context across every hop of the log (docs/operations.md#traces): a message carries
 * `traceparent` (and `tracestate`) in its headers, and each consumer group's handling of it is
 * a span whose parent is that context, so one write's trace runs from the API through
 * write-admission to every group that folds its events, and a deletion job's through its tasks
 * and acks. Propagation is per message, not per send: the buses batch and commit in
 * transactions, so the context active when kafkajs sends is not the one a message belongs to
 * (which is why kafkajs' own instrumentation is not used).
 *
 * Without a tracer provider (tracing not asked for, the default) every call here is
 * @opentelemetry/api's no-op: no header is written and no span recorded.
 *
 * Span attributes are ids and decisions only: topic, partition, offset, group, the message's
 * type (a command or event type), never a key's or value's content.
 *
 * A message carries `traceparent` alone, written and read here, not by the SDK's propagators:
 * W3C `baggage` and `tracestate` are caller-chosen data (up to 8 KB), and in a header they would
 * ride unsealed through every hop and into the event log, out of reach of crypto-shredding.
 */
const tracer = () => trace.getTracer('@gm/bus');

/** The span context each message of a batch is handled in, for `withMessageContext`. */
const messageContexts = new WeakMap<ConsumedMessage, Context>();

/**
 * Runs `fn` in the context of one message of a batch, so what it sends continues that
 * message's trace (a batch handler that sends per message, e.g. write-admission's events per
 * command). Outside a traced batch it just runs `fn`.
 */
export function withMessageContext<T>(message: ConsumedMessage, fn: () => T): T {
  const found = messageContexts.get(message);
  return found === undefined ? fn() : context.with(found, fn);
}

/**
 * The message's type on our own topics (commands and events: their producers are our services),
 * a decision, not content. A platform's memory.ingest message says what it likes: not recorded.
 */
const TYPED_TOPICS: ReadonlySet<string> = new Set([TOPICS.commands, TOPICS.events]);
function typeOf(topic: string, value: unknown): string | undefined {
  if (!TYPED_TOPICS.has(topic)) return undefined;
  const type = (value as { type?: unknown } | null)?.type;
  return typeof type === 'string' && /^[A-Za-z]{1,64}$/.test(type) ? type : undefined;
}

/** `version-traceId-parentId-flags`, the W3C form; version ff is invalid, later versions may append fields. */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** The trace context a message's `traceparent` names, or none (absent, malformed, all-zero ids). */
function parentOf(message: ConsumedMessage): Context {
  const match = TRACEPARENT.exec(message.headers?.traceparent ?? '');
  if (match === null || match[1] === 'ff' || (match[1] === '00' && match[5] !== undefined)) return ROOT_CONTEXT;
  const spanContext = { traceId: match[2]!, spanId: match[3]!, traceFlags: Number.parseInt(match[4]!, 16) & TraceFlags.SAMPLED, isRemote: true };
  return isSpanContextValid(spanContext) ? trace.setSpanContext(ROOT_CONTEXT, spanContext) : ROOT_CONTEXT;
}

/** `messages` with the active span's `traceparent` in their headers, unless one names its own already. */
function withTraceContext(messages: OutgoingMessage[], active: Context = context.active()): OutgoingMessage[] {
  // No valid span (tracing off: the no-op tracer's): nothing to carry, nothing copied.
  const spanContext = trace.getSpanContext(active);
  if (spanContext === undefined || !isSpanContextValid(spanContext)) return messages;
  const traceparent = `00-${spanContext.traceId}-${spanContext.spanId}-${(spanContext.traceFlags & TraceFlags.SAMPLED) === 0 ? '00' : '01'}`;
  return messages.map((m) => (m.headers?.traceparent !== undefined ? m : { ...m, headers: { ...m.headers, traceparent } }));
}

function processSpan(message: ConsumedMessage, groupId: string, system: string): Span {
  const span = tracer().startSpan(`process ${message.topic}`, { kind: SpanKind.CONSUMER }, parentOf(message));
  // Tracing off (or the span not sampled): nothing to describe, on every message of the hot path.
  if (!span.isRecording()) return span;
  const attributes: Attributes = {
    'messaging.system': system,
    'messaging.operation.type': 'process',
    'messaging.destination.name': message.topic,
    'messaging.consumer.group.name': groupId,
    'messaging.destination.partition.id': String(message.partition),
    'messaging.kafka.offset': message.offset,
  };
  const type = typeOf(message.topic, message.value);
  if (type !== undefined) attributes['gm.message.type'] = type;
  return span.setAttributes(attributes);
}

function ended(spans: readonly Span[], err?: unknown): void {
  for (const span of spans) {
    if (err !== undefined) {
      // The error's code or class, never its message (it may quote a value).
      const code = (err as { code?: unknown } | null)?.code;
      const name = (err as { name?: unknown } | null)?.name;
      span.setStatus({ code: SpanStatusCode.ERROR, message: typeof code === 'string' ? code : typeof name === 'string' ? name : 'Error' });
    }
    span.end();
  }
}

/** A context whose sends carry the trace context active when they are made. */
function tracedContext(ctx: ProcessContext): ProcessContext {
  return {
    send: (messages) => ctx.send(withTraceContext(messages)),
    sendWithPositions: (build) => {
      // Built inside the commit, out of the handler's context: take the context now.
      const active = context.active();
      ctx.sendWithPositions((sent) => withTraceContext(build(sent), active));
    },
    onCommitted: (fn) => ctx.onCommitted(fn),
    onDiscarded: (fn) => ctx.onDiscarded(fn),
  };
}

/**
 * The bus with trace context carried in message headers and a span per message handled.
 * `system` names the log in the spans (`kafka`, or the embedded SQLite log).
 */
export function tracedBus(bus: Bus, system: 'kafka' | 'gm_log'): Bus {
  const produce: Bus['produce'] = (messages) => {
    const topics = [...new Set(messages.map((m) => m.topic))];
    return tracer().startActiveSpan(`send ${topics.join(',')}`, { kind: SpanKind.PRODUCER }, async (span) => {
      if (span.isRecording()) {
        const attributes: Attributes = { 'messaging.system': system, 'messaging.operation.type': 'send', 'messaging.batch.message_count': messages.length };
        if (topics.length === 1 && topics[0] !== undefined) attributes['messaging.destination.name'] = topics[0];
        const types = [...new Set(messages.map((m) => typeOf(m.topic, m.value)).filter((t) => t !== undefined))];
        if (types.length === 1 && types[0] !== undefined) attributes['gm.message.type'] = types[0];
        span.setAttributes(attributes);
      }
      try {
        return await bus.produce(withTraceContext(messages));
      } catch (err) {
        ended([span], err);
        throw err;
      } finally {
        if (span.isRecording()) span.end();
      }
    });
  };
  const subscribe: Bus['subscribe'] = (options) => {
    const { handler, batchHandler, ...settings } = options;
    if (batchHandler !== undefined) {
      const traced: BatchHandler = async (messages, ctx) => {
        const spans = messages.map((message) => {
          const span = processSpan(message, settings.groupId, system);
          messageContexts.set(message, trace.setSpan(parentOf(message), span));
          return span;
        });
        // A batch of one runs in its message's context; a larger one leaves it to the handler
        // (withMessageContext), or its sends carry no parent (a sink sends nothing).
        const only = messages.length === 1 && messages[0] !== undefined ? messageContexts.get(messages[0]) : undefined;
        try {
          await (only === undefined ? batchHandler(messages, tracedContext(ctx)) : context.with(only, () => batchHandler(messages, tracedContext(ctx))));
          ended(spans);
        } catch (err) {
          ended(spans, err);
          throw err;
        }
      };
      return bus.subscribe({ ...settings, batchHandler: traced });
    }
    const traced: MessageHandler = async (message, ctx) => {
      const span = processSpan(message, settings.groupId, system);
      try {
        await context.with(trace.setSpan(parentOf(message), span), () => handler(message, tracedContext(ctx)));
        ended([span]);
      } catch (err) {
        ended([span], err);
        throw err;
      }
    };
    return bus.subscribe({ ...settings, handler: traced });
  };
  return new Proxy(bus, {
    get: (target, prop, receiver) => {
      if (prop === 'produce') return produce;
      if (prop === 'subscribe') return subscribe;
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
