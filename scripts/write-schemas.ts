/** `pnpm schemas`: writes the topics' JSON Schemas (generated from the zod contracts) into docs/schemas/. */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { topicJsonSchemas } from '@gm/contracts';

const dir = path.resolve(import.meta.dirname, '../docs/schemas');
mkdirSync(dir, { recursive: true });
for (const [file, schema] of Object.entries(topicJsonSchemas())) {
  writeFileSync(path.join(dir, file), `${JSON.stringify(schema, null, 2)}\n`);
  process.stdout.write(`wrote docs/schemas/${file}\n`);
}
