/** One series' value in a Prometheus text exposition. */
export interface Sample {
  name: string;
  labels: Readonly<Record<string, string>>;
  value: number;
}

const SERIES = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?$/;
const LABEL = /\s*([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/y;

const unescapeLabel = (value: string): string => value.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));

/**
 * The samples of a text exposition (version 0.0.4, what prom-client writes), for the series
 * `keep` names. Comments and lines it cannot read are skipped: a scrape is evidence for an
 * overview, and one odd line must not hide every other number.
 */
export function parseExposition(text: string, keep: (name: string) => boolean): Sample[] {
  const samples: Sample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const [, name, labelText, valueText] = SERIES.exec(line) ?? [];
    if (name === undefined || !keep(name)) continue;
    const value = Number(valueText);
    const labels = parseLabels(labelText ?? '');
    if (labels === undefined || Number.isNaN(value)) continue;
    samples.push({ name, labels, value });
  }
  return samples;
}

function parseLabels(text: string): Record<string, string> | undefined {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const at = LABEL.lastIndex;
    const [, name, value] = LABEL.exec(text) ?? [];
    if (name === undefined || value === undefined) return text.slice(at).trim() === '' ? labels : undefined;
    labels[name] = unescapeLabel(value);
  }
  return labels;
}
