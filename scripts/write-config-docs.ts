/** `pnpm docs:config`: renders the configuration tables from the zod env schemas into the docs (scripts/config-docs.ts). */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CONFIG_DOCS, ROOT, renderDoc } from './config-docs.ts';

for (const file of Object.keys(CONFIG_DOCS)) {
  const absolute = path.join(ROOT, file);
  const committed = readFileSync(absolute, 'utf8');
  const rendered = renderDoc(file, committed);
  if (rendered === committed) {
    process.stdout.write(`${file} is current\n`);
    continue;
  }
  writeFileSync(absolute, rendered);
  process.stdout.write(`wrote ${file}\n`);
}
