import { describe, expect, it } from 'vitest';
import { OrchestratorEnv } from './env.ts';

const BASE = { KAFKA_BROKERS: '127.0.0.1:9092', REDIS_URL: 'redis://127.0.0.1:6379' };

describe('deletion-orchestrator environment', () => {
  it('deletes the vectors too by default, as semantic retrieval is on by default', () => {
    expect(OrchestratorEnv.parse(BASE).MEMORY_DELETION_TARGETS).toEqual(['primary', 'keyword', 'vector', 'summary', 'retrieval_cache', 'evidence_packet', 'key']);
  });

  it('leaves the vector target out where the stack keeps no vectors', () => {
    expect(OrchestratorEnv.parse({ ...BASE, MEMORY_SEMANTIC: 'off' }).MEMORY_DELETION_TARGETS).not.toContain('vector');
  });

  it('refuses a vector target nobody would serve, naming the variable, rather than fail every job at its deadline', () => {
    const parsed = OrchestratorEnv.safeParse({ ...BASE, MEMORY_SEMANTIC: 'off', MEMORY_DELETION_TARGETS: 'primary,vector' });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((i) => i.path.join('.'))).toEqual(['MEMORY_DELETION_TARGETS']);
  });

  it('keeps an explicit list as given, and refuses an unknown target', () => {
    expect(OrchestratorEnv.parse({ ...BASE, MEMORY_DELETION_TARGETS: 'primary, keyword' }).MEMORY_DELETION_TARGETS).toEqual(['primary', 'keyword']);
    expect(OrchestratorEnv.safeParse({ ...BASE, MEMORY_DELETION_TARGETS: 'primary,tape-backup' }).success).toBe(false);
  });
});
