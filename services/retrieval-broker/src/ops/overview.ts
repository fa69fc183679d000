/**
 * GET /v1/ops/overview: what an SRE watches while scaling consumer groups, read from the
 * services' own /metrics (the embedded runtime: its one exposition; distributed: this broker's
 * and every URL of MEMORY_OPS_METRICS_URLS) and from the dead-letter topics themselves.
 *
 * Lag is `gm_consumer_lag`, which each service reads from the log at scrape time: two instances
 * of one group report the same number, so the overview keeps the largest, never a sum. Rates are
 * the counters' change between two readings. The history (the chart's data) is kept here, a
 * reading every `intervalMs` for `windowMs`, from the first overview asked for on: a deployment
 * nobody watches pays nothing.
 */
import type { Bus } from '@gm/bus';
import { TOPICS, dlqTopic, type OpsOverview } from '@gm/contracts';
import { parseExposition, type Sample } from './prometheus-text.ts';

/** One exposition to read: this process's own, or a service's /metrics URL. */
export interface OpsSource {
  /** `local` or the URL: shown to the SRE, so an unreachable service is named. */
  name: string;
  read(): Promise<string>;
}

export interface OpsOverviewOptions {
  intervalMs: number;
  windowMs: number;
  /** A URL source's answer is awaited this long before it counts as unreachable. */
  scrapeTimeoutMs: number;
  /** Wall time, epoch ms: rates are per real second, whatever clock the memory reads. */
  now: () => number;
}

const DEFAULTS: OpsOverviewOptions = { intervalMs: 5_000, windowMs: 10 * 60_000, scrapeTimeoutMs: 2_000, now: () => Date.now() };

/** Readings closer than this to the previous one add no point: a console polling every 2 s and the timer share the history. */
const MIN_SPACING_MS = 1_000;

const SERIES = new Set(['gm_consumer_lag', 'gm_writes_total', 'gm_search_seconds_count', 'gm_dead_letters_total']);

/** A service's /metrics as a source; a slow or failing one is reported, not waited for. */
export function scrapedSource(url: string, timeoutMs = DEFAULTS.scrapeTimeoutMs): OpsSource {
  return {
    name: url,
    read: async () => {
      const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
      if (!response.ok) throw new Error(`${url} answered ${response.status}`);
      return response.text();
    },
  };
}

type History = OpsOverview['history'][number];

/** What one scrape of the sources gives; the dead letters are read separately, per answer. */
type Scrape = Pick<OpsOverview, 'consumers' | 'counters' | 'sources'> & { atMs: number };

export class OpsOverviewReader {
  private readonly history: History[] = [];
  private previous: { atMs: number; writes: number; searches: number } | undefined;
  private scraping: Promise<Scrape> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly options: OpsOverviewOptions;

  constructor(
    private readonly sources: readonly OpsSource[],
    private readonly bus: Pick<Bus, 'endOffsets'>,
    options: Partial<OpsOverviewOptions> = {},
  ) {
    this.options = { ...DEFAULTS, ...options };
  }

  /** The overview now; from the first call on, a scrape every `intervalMs` keeps the history. */
  async read(): Promise<OpsOverview> {
    if (this.timer === undefined) {
      // Unref'd: an overview someone once looked at never keeps a process alive. The timer only
      // extends the history: the dead-letter topics are read for an answer, not on every tick.
      this.timer = setInterval(() => void this.scrape().catch(() => undefined), this.options.intervalMs);
      this.timer.unref();
    }
    const { atMs, consumers, counters, sources } = await this.scrape();
    return {
      at: new Date(atMs).toISOString(),
      consumers,
      deadLetters: await this.parked(),
      counters,
      history: this.history.map((point) => ({ ...point })),
      sources,
    };
  }

  close(): void {
    clearInterval(this.timer);
  }

  /** One scrape at a time: concurrent callers (and the timer) share it. */
  private scrape(): Promise<Scrape> {
    this.scraping ??= this.scrapeOnce().finally(() => {
      this.scraping = undefined;
    });
    return this.scraping;
  }

  private async scrapeOnce(): Promise<Scrape> {
    const atMs = this.options.now();
    const scraped = await Promise.all(this.sources.map(async (source) => {
      try {
        return { source: source.name, ok: true, samples: parseExposition(await source.read(), (name) => SERIES.has(name)) };
      } catch {
        return { source: source.name, ok: false, samples: [] as Sample[] };
      }
    }));
    const samples = scraped.flatMap((s) => s.samples);
    const total = (name: string) => samples.filter((s) => s.name === name).reduce((sum, s) => sum + s.value, 0);
    const counters = { writes: total('gm_writes_total'), searches: total('gm_search_seconds_count'), deadLettered: total('gm_dead_letters_total') };
    const consumers = consumersOf(samples);
    this.remember(atMs, consumers.reduce((sum, c) => sum + c.lag, 0), counters);
    return { atMs, consumers, counters, sources: scraped.map(({ source, ok }) => ({ source, ok })) };
  }

  private remember(atMs: number, lag: number, counters: { writes: number; searches: number }): void {
    const previous = this.previous;
    if (previous !== undefined && atMs - previous.atMs < MIN_SPACING_MS) return;
    // A counter that went down is a restarted process: that interval's rate is unknown, read as 0.
    const rate = (now: number, before: number, seconds: number) => (now < before ? 0 : round((now - before) / seconds));
    const seconds = previous === undefined ? 0 : (atMs - previous.atMs) / 1000;
    this.history.push({
      at: new Date(atMs).toISOString(), lag,
      writesPerSecond: previous === undefined ? 0 : rate(counters.writes, previous.writes, seconds),
      searchesPerSecond: previous === undefined ? 0 : rate(counters.searches, previous.searches, seconds),
    });
    this.previous = { atMs, ...counters };
    const oldest = atMs - this.options.windowMs;
    while (this.history[0] !== undefined && Date.parse(this.history[0].at) < oldest) this.history.shift();
  }

  /** Messages parked on each topic's dead-letter topic since it began (the log's count: it survives restarts, unlike a counter). */
  private async parked(): Promise<OpsOverview['deadLetters']> {
    const topics = Object.values(TOPICS).filter((topic) => topic !== TOPICS.replies);
    const counts = await Promise.all(topics.map(async (topic) => {
      try {
        return { topic, parked: (await this.bus.endOffsets(dlqTopic(topic))).reduce((sum, end) => sum + end, 0) };
      } catch {
        return undefined; // a topic this deployment never created has no dead letters
      }
    }));
    return counts.filter((c) => c !== undefined);
  }
}

const round = (n: number): number => Math.round(n * 100) / 100;

/** Per group and topic, each partition's lag: the largest any source reports (see the module comment). */
function consumersOf(samples: readonly Sample[]): OpsOverview['consumers'] {
  const byGroup = new Map<string, { group: string; topic: string; partitions: Map<number, number> }>();
  for (const s of samples) {
    if (s.name !== 'gm_consumer_lag') continue;
    const { group, topic, partition } = s.labels;
    if (group === undefined || topic === undefined || partition === undefined) continue;
    const key = `${group}\u0000${topic}`;
    const entry = byGroup.get(key) ?? { group, topic, partitions: new Map<number, number>() };
    entry.partitions.set(Number(partition), Math.max(entry.partitions.get(Number(partition)) ?? 0, s.value));
    byGroup.set(key, entry);
  }
  return [...byGroup.values()]
    .map(({ group, topic, partitions }) => {
      const list = [...partitions].sort(([a], [b]) => a - b).map(([partition, lag]) => ({ partition, lag }));
      return { group, topic, lag: list.reduce((sum, p) => sum + p.lag, 0), partitions: list };
    })
    .sort((a, b) => a.group.localeCompare(b.group) || a.topic.localeCompare(b.topic));
}
