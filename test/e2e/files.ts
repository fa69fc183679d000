import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** Every regular file under `dir`, recursively (write-ahead logs and shared-memory files included); none when there is no such directory. */
export function filesUnder(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
      const entry = path.join(e.parentPath, e.name);
      return e.isDirectory() ? filesUnder(entry) : e.isFile() ? [entry] : [];
    });
  } catch {
    return [];
  }
}

/**
 * `file: needle #i` for each file whose bytes hold a needle (strings as UTF-8). A file that went
 * away between the listing and the read (a rewrite's temporary file) holds nothing.
 */
export function filesHolding(files: readonly string[], needles: ReadonlyArray<string | Buffer>, relativeTo = '/'): string[] {
  return files.flatMap((file) => {
    let bytes: Buffer;
    try {
      bytes = readFileSync(file);
    } catch {
      return [];
    }
    return needles.flatMap((n, i) => (bytes.includes(typeof n === 'string' ? Buffer.from(n, 'utf8') : n) ? [`${path.relative(relativeTo, file)}: needle #${i}`] : []));
  });
}
