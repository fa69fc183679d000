/**
 * docker-compose.yml cannot be run here (no Docker engine), so it is held to what `docker compose
 * config` would resolve and to the code: the same services, commands and image as the Helm
 * chart, and each service's environment parsed by that service's own env schema (what its
 * main.ts would do at start), with no variable the service does not read.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { DEPLOYED_SERVICES } from '@gm/contracts';
import { envVariablesOf } from '@gm/config';
import { SERVICE_ENVS } from '../config-docs.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

interface ComposeService {
  build?: string;
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
}
// Merge keys (`<<: *service`) resolved as compose resolves them.
const compose = parseYaml(readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as { services: Record<string, ComposeService> };
const topology = JSON.parse(readFileSync(path.join(ROOT, 'deploy/helm/governed-memory/files/topology.json'), 'utf8')) as {
  services: Record<string, { command: string[] }>;
};

describe('docker-compose.yml', () => {
  it('runs every service of the distributed runtime from the repository image, with the command the chart runs', () => {
    for (const service of DEPLOYED_SERVICES) {
      const entry = compose.services[service];
      expect(entry, service).toBeDefined();
      expect(entry?.build, service).toBe('.');
      expect(entry?.command, service).toEqual(topology.services[service]?.command);
    }
  });

  it.each(DEPLOYED_SERVICES)("gives %s an environment its env schema accepts, and only variables it reads", (service) => {
    const environment = compose.services[service]?.environment ?? {};
    const reads = new Set(envVariablesOf(SERVICE_ENVS[service]).map((v) => v.name));
    expect(Object.keys(environment).filter((name) => !reads.has(name))).toEqual([]);
    const parsed = SERVICE_ENVS[service].safeParse(environment);
    expect(parsed.success, parsed.success ? '' : JSON.stringify(parsed.error.issues)).toBe(true);
    // Probes and the broker's ops overview reach each container's health server on its address.
    expect(environment.HEALTH_HOST).toBe('0.0.0.0');
    // Key files come from the keys volume, mounted read-only.
    for (const [name, value] of Object.entries(environment).filter(([n]) => n.endsWith('_FILE'))) {
      expect(value, name).toMatch(/^\/secrets\//);
      expect(compose.services[service]?.volumes).toContain('secrets:/secrets:ro');
    }
  });
});
