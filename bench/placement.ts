import { poolWrites, summarizeWrites, type WriteLoad, type WriteLoadResult, type WriteSamples } from './http-probe.ts';
import type { BenchOptions } from './options.ts';
import { benchEmbeddedWrites } from './runtimes.ts';
import { progress } from './stats.ts';

/** Where the embedded runtime's consumer services run (MEMORY_PIPELINE). */
export type Placement = 'thread' | 'inline';

export interface PlacementResult {
  load: WriteLoad;
  /** Run order, e.g. `TI IT`: T the pipeline thread, I inline, a space between rounds. */
  order: string;
  /** Each placement's runs pooled. */
  thread: WriteLoadResult;
  inline: WriteLoadResult;
}

/**
 * The pipeline's placement (docs/pipeline.md: "a worker thread, or in-process consumers, whichever
 * measures better"): the same write load on fresh data directories, the consumer services in a
 * thread of their own and in the HTTP thread, rounds alternating the order so a drift of the
 * machine weighs on both alike.
 */
export async function measurePlacement(options: BenchOptions): Promise<PlacementResult> {
  const load: WriteLoad = { writes: options.encryptionWrites, throughputWrites: options.encryptionThroughput, concurrency: options.concurrency };
  const samples: Record<Placement, WriteSamples[]> = { thread: [], inline: [] };
  const rounds: string[] = [];
  for (let round = 0; round < 2; round += 1) {
    const order: Placement[] = round % 2 === 0 ? ['thread', 'inline'] : ['inline', 'thread'];
    for (const placement of order) {
      samples[placement].push(await benchEmbeddedWrites(load, {}, `placement round ${round + 1}/2 ${placement}`, { MEMORY_PIPELINE: placement }));
    }
    rounds.push(order.map((p) => (p === 'thread' ? 'T' : 'I')).join(''));
  }
  const thread = summarizeWrites(poolWrites(samples.thread));
  const inline = summarizeWrites(poolWrites(samples.inline));
  progress(`placement: thread ${thread.throughput.perSecond.toFixed(0)} writes/s, inline ${inline.throughput.perSecond.toFixed(0)} writes/s`);
  return { load, order: rounds.join(' '), thread, inline };
}
