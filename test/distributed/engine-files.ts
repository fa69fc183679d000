import path from 'node:path';
import { Redis } from 'ioredis';
import { filesUnder } from '../e2e/files.ts';

/** Redis's persistence directory (its RDB file and AOF directory), as Redis names it. */
async function redisFiles(url: string): Promise<string[]> {
  const redis = new Redis(url, { lazyConnect: true });
  try {
    await redis.connect();
    const [, dir] = (await redis.config('GET', 'dir')) as [string, string];
    return filesUnder(dir);
  } finally {
    redis.disconnect();
  }
}

/** The shard directories (segments, translog) of the namespace's indices (`gm-<namespace>-…`, adapters/open.ts) on the node that answers `url`. */
async function elasticsearchFiles(url: string, namespace: string): Promise<string[]> {
  const get = async <T>(route: string): Promise<T> => {
    const res = await fetch(new URL(route, url));
    if (!res.ok) throw new Error(`GET ${route}: ${res.status}`);
    return (await res.json()) as T;
  };
  const settings = await get<{ nodes: Record<string, { settings: { path: { data: string | string[] } } }> }>('/_nodes/_local/settings?filter_path=nodes.*.settings.path.data');
  const dataPaths = Object.values(settings.nodes).flatMap((n) => [n.settings.path.data].flat());
  const indices = await get<Array<{ uuid: string }>>(`/_cat/indices/${encodeURIComponent(`gm-${namespace}-*`)}?format=json&h=uuid&expand_wildcards=all`);
  return dataPaths.flatMap((data) => indices.flatMap((i) => filesUnder(path.join(data, 'indices', i.uuid))));
}

/**
 * The files the distributed runtime's stores keep beside the log, for raw scans: Redis's AOF
 * and RDB files and the namespace's Elasticsearch shards, when the engines run on this machine.
 */
export async function engineFiles(engines: { redisUrl: string; elasticsearchUrl: string }, namespace: string): Promise<string[]> {
  return [...await redisFiles(engines.redisUrl), ...await elasticsearchFiles(engines.elasticsearchUrl, namespace)];
}
