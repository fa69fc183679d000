import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { processAlive, RUNTIME_LOCK_FILE } from '@gm/config';

/**
 * One process per data directory: two runtimes folding the same log would both write the
 * projections. A lock left by a killed process (kill -9) is taken over.
 */
export function lockDataDir(dataDir: string): () => void {
  const file = path.join(dataDir, RUNTIME_LOCK_FILE);
  if (existsSync(file)) {
    const pid = Number(readFileSync(file, 'utf8').trim());
    if (Number.isInteger(pid) && pid !== process.pid && processAlive(pid)) {
      throw new Error(`the data directory ${dataDir} is in use by process ${pid}; stop it first`);
    }
  }
  writeFileSync(file, String(process.pid));
  return () => {
    if (existsSync(file) && readFileSync(file, 'utf8').trim() === String(process.pid)) rmSync(file);
  };
}
