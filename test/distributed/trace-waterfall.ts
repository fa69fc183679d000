/**
 * A trace as Jaeger's API returns it, drawn as a waterfall page: one row per span, indented
 * under its parent, a bar from its start to its end, its service and what it handled. The
 * tracing spec renders one write's trace with it in Chromium for docs/operations.md (the Jaeger
 * binary built from its Go module carries no UI).
 */
export interface JaegerTrace {
  traceID: string;
  spans: Array<{
    traceID: string; spanID: string; operationName: string; processID: string; startTime: number; duration: number;
    references: Array<{ refType: string; spanID: string }>; tags: Array<{ key: string; value: unknown }>;
  }>;
  processes: Record<string, { serviceName: string }>;
}

const escape = (text: string) => text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] ?? c);

export function waterfallHtml(trace: JaegerTrace, title: string): string {
  const byId = new Map(trace.spans.map((s) => [s.spanID, s]));
  const parentOf = (s: JaegerTrace['spans'][number]) => s.references.find((r) => r.refType === 'CHILD_OF' && byId.has(r.spanID))?.spanID;
  const children = new Map<string | undefined, JaegerTrace['spans']>();
  for (const span of trace.spans) children.set(parentOf(span), [...(children.get(parentOf(span)) ?? []), span]);
  const start = Math.min(...trace.spans.map((s) => s.startTime));
  const end = Math.max(...trace.spans.map((s) => s.startTime + s.duration));
  const width = Math.max(1, end - start);
  const rows: string[] = [];
  const walk = (parent: string | undefined, depth: number) => {
    for (const span of (children.get(parent) ?? []).toSorted((a, b) => a.startTime - b.startTime)) {
      const tag = (key: string) => span.tags.find((t) => t.key === key)?.value;
      const detail = [tag('messaging.consumer.group.name'), tag('gm.message.type'), tag('http.response.status_code') ?? tag('http.status_code')]
        .filter((v) => v !== undefined).map((v) => escape(String(v))).join(' · ');
      const left = ((span.startTime - start) / width) * 100;
      const barWidth = Math.max(0.4, (span.duration / width) * 100);
      rows.push(`<tr><td class="service">${escape(trace.processes[span.processID]?.serviceName ?? '')}</td>`
        + `<td class="name" style="padding-left:${8 + depth * 16}px">${escape(span.operationName)}<span class="detail">${detail}</span></td>`
        + `<td class="timeline"><div class="bar" style="left:${left}%;width:${barWidth}%"></div><span class="ms" style="left:${Math.min(left + barWidth, 88)}%">${(span.duration / 1000).toFixed(1)} ms</span></td></tr>`);
      walk(span.spanID, depth + 1);
    }
  };
  walk(undefined, 0);
  return `<!doctype html><html><head><meta charset="utf-8"><style>
body{font:13px system-ui,sans-serif;margin:16px;color:#1b1f24}
h1{font-size:16px;margin:0 0 4px} p{margin:0 0 12px;color:#57606a}
table{border-collapse:collapse;width:1200px} td{border-bottom:1px solid #eaeef2;padding:4px 8px;white-space:nowrap}
.service{color:#0550ae;width:150px} .name{width:430px} .detail{color:#57606a;margin-left:8px;font-size:12px}
.timeline{position:relative;width:560px} .bar{position:absolute;top:6px;height:10px;background:#54aeff;border-radius:2px}
.ms{position:absolute;top:3px;margin-left:6px;font-size:11px;color:#57606a}
</style></head><body><h1>${escape(title)}</h1><p>trace ${escape(trace.traceID)} · ${trace.spans.length} spans · ${(width / 1000).toFixed(1)} ms · from Jaeger's API</p>
<table>${rows.join('')}</table></body></html>`;
}
