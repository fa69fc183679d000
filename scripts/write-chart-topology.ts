/** `pnpm deploy:chart`: writes what the Helm chart knows of the code (scripts/chart-topology.ts). */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './config-docs.ts';
import { TOPOLOGY_FILE, renderTopology } from './chart-topology.ts';

const rendered = renderTopology();
const committed = (() => {
  try {
    return readFileSync(TOPOLOGY_FILE, 'utf8');
  } catch {
    return '';
  }
})();
const name = path.relative(ROOT, TOPOLOGY_FILE);
if (rendered === committed) {
  process.stdout.write(`${name} is current\n`);
} else {
  writeFileSync(TOPOLOGY_FILE, rendered);
  process.stdout.write(`wrote ${name}\n`);
}
