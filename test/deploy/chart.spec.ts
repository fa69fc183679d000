/**
 * The Helm chart (deploy/helm/governed-memory) checked with the real tools, offline
 * (infra/local/ops-tools.sh builds or fetches them once): helm lint and helm template for the
 * default values and two other sets, every rendered object against the Kubernetes schemas and
 * the CRDs of KEDA, Strimzi and the Prometheus operator, promtool on the alert rules and their
 * unit tests, and the rendered objects against the code's services, groups, topics and
 * variables. docs/deploy.md#checks.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { GROUP_SUBSCRIPTIONS, dlqTopic, serviceCommand, type DeployedService } from '@gm/contracts';
import { memoryTopicSpecs } from '@gm/bus';

const ROOT = path.resolve(import.meta.dirname, '../..');
const CHART = path.join(ROOT, 'deploy/helm/governed-memory');
/** The oldest Kubernetes the chart supports (Chart.yaml kubeVersion) and the newest the validator knows. */
const KUBERNETES_VERSIONS = ['1.29.0', '1.37.0'];
const VALUE_SETS = ['minimal', 'production', 'plain-kubernetes'] as const;
/** The default values plus what every deployment must say (the engines, the key Secret). */
const valuesFile = (set: string) => path.join(CHART, 'tests', `values-${set}.yaml`);

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec: Record<string, unknown>;
}
interface Container {
  env: Array<{ name: string; value: string }>;
  volumeMounts: Array<{ name: string; mountPath: string }>;
  command: string[];
}
interface PodSpec {
  containers: Container[];
  volumes: Array<{ name: string; secret?: { secretName: string; items: Array<{ key: string }> }; csi?: unknown }>;
}

let tools: string;
const helm = (...args: string[]) => spawnSync(path.join(tools, 'bin/helm'), args, { cwd: CHART, encoding: 'utf8' });

function render(...args: string[]): K8sObject[] {
  const result = helm('template', 'gm', '.', ...args);
  if (result.status !== 0) throw new Error(`helm template ${args.join(' ')} failed:\n${result.stderr}`);
  return parseAllDocuments(result.stdout).map((d) => d.toJS() as K8sObject).filter((o) => o !== null);
}
/** One render per value set, shared by the tests that read it (they only filter it). */
const rendered = new Map<string, K8sObject[]>();
const renderSet = (set: string): K8sObject[] => {
  if (!rendered.has(set)) rendered.set(set, render('-f', valuesFile(set)));
  return rendered.get(set)!;
};
/** helm template's error for values that must be refused. */
const refusal = (...args: string[]) => {
  const result = helm('template', 'gm', '.', '-f', valuesFile('minimal'), ...args);
  expect(result.status, result.stdout).not.toBe(0);
  return result.stderr;
};
const componentOf = (o: K8sObject) => o.metadata.labels?.['app.kubernetes.io/component'] ?? '';
const podOf = (o: K8sObject) => (o.spec.template as { spec: PodSpec }).spec;
const valuesOf = (set: string) => parseYaml(readFileSync(valuesFile(set), 'utf8')) as { partitions?: number; config: Record<string, string> };
const topology = JSON.parse(readFileSync(path.join(CHART, 'files/topology.json'), 'utf8')) as {
  services: Record<string, { variables: Array<{ name: string; required: boolean }>; secretFiles: Record<string, string> }>;
};

describe('the Helm chart, with the real helm, promtool and schemas', () => {
  beforeAll(() => {
    // Builds helm and promtool from the Go module proxy the first time (minutes), then only checks.
    execFileSync('bash', [path.join(ROOT, 'infra/local/ops-tools.sh'), 'install'], { stdio: ['ignore', 'inherit', 'inherit'] });
    tools = execFileSync('bash', [path.join(ROOT, 'infra/local/ops-tools.sh'), 'path'], { encoding: 'utf8' }).trim();
  }, 1_200_000);

  it.each(VALUE_SETS)('passes helm lint --strict with the %s values', (set) => {
    const result = helm('lint', '--strict', '.', '-f', valuesFile(set));
    expect(result.status, `${result.stdout}\n${result.stderr}`).toBe(0);
    expect(result.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
  });

  it.each(VALUE_SETS)('renders only objects valid for the Kubernetes API and the KEDA, Strimzi and Prometheus operator CRDs (%s values)', (set) => {
    const rendered = helm('template', 'gm', '.', '-f', valuesFile(set));
    expect(rendered.status, rendered.stderr).toBe(0);
    for (const version of KUBERNETES_VERSIONS) {
      const check = spawnSync(path.join(tools, 'venv/bin/python'), [path.join(ROOT, 'scripts/deploy/validate-manifests.py'), path.join(tools, 'crds'), version], {
        input: rendered.stdout, encoding: 'utf8',
      });
      expect(check.status, `${check.stdout}\n${check.stderr}`).toBe(0);
      expect(check.stdout).toMatch(/objects checked against Kubernetes .* 0 problems/);
    }
  });

  it('the schema check itself refuses an unknown field and a wrong type (it is not vacuous)', () => {
    const rendered = helm('template', 'gm', '.', '-f', valuesFile('minimal')).stdout
      .replace('  minReplicaCount: 1', '  minReplicaCount: 1\n  maxReplicas: 3')
      .replace('terminationGracePeriodSeconds: 60', 'terminationGracePeriodSeconds: "sixty"');
    const check = spawnSync(path.join(tools, 'venv/bin/python'), [path.join(ROOT, 'scripts/deploy/validate-manifests.py'), path.join(tools, 'crds'), '1.37.0'], {
      input: rendered, encoding: 'utf8',
    });
    expect(check.status).toBe(1);
    expect(check.stdout).toMatch(/ScaledObject\/\S+: spec: Additional properties are not allowed \('maxReplicas' was unexpected\)/);
    expect(check.stdout).toMatch(/Deployment\/\S+: spec\.template\.spec\.terminationGracePeriodSeconds: 'sixty' is not of type 'integer'/);
  });

  it('scales every consumer-group service on exactly its groups and topics, namespaced as the bus names them, never past the partitions', () => {
    for (const set of ['minimal', 'production'] as const) {
      const values = valuesOf(set);
      const prefix = values.config.MEMORY_NAMESPACE ? `${values.config.MEMORY_NAMESPACE}.` : '';
      const partitions = values.partitions ?? 12;
      const scaled = renderSet(set).filter((o) => o.kind === 'ScaledObject');
      const triggers = scaled.flatMap((o) => (o.spec.triggers as Array<{ metadata: { consumerGroup: string; topic: string } }>).map((t) => ({
        service: componentOf(o), group: t.metadata.consumerGroup, topic: t.metadata.topic,
      })));
      const expected = Object.entries(GROUP_SUBSCRIPTIONS).filter(([, s]) => s.service !== 'retrieval-broker')
        .flatMap(([group, s]) => s.topics.map((topic) => ({ service: s.service, group: `${prefix}${group}`, topic: `${prefix}${topic}` })));
      const key = (t: { service: string; group: string; topic: string }) => `${t.service} ${t.group} ${t.topic}`;
      expect(triggers.map(key).toSorted(), set).toEqual(expected.map(key).toSorted());
      for (const o of scaled) expect(o.spec.maxReplicaCount as number, o.metadata.name).toBeLessThanOrEqual(partitions);
    }
    // The API is stateless: CPU, not lag.
    const hpa = renderSet('minimal').filter((o) => o.kind === 'HorizontalPodAutoscaler');
    expect(hpa.map(componentOf)).toEqual(['retrieval-broker']);
  });

  it("declares every topic and its dead letters as a KafkaTopic with the code's configs, kept forever where design §4 says so", () => {
    const topics = renderSet('production').filter((o) => o.kind === 'KafkaTopic');
    const specs = memoryTopicSpecs(24);
    expect(topics.map((t) => t.spec.topicName).toSorted()).toEqual(specs.flatMap((s) => [s.name, dlqTopic(s.name)]).map((n) => `acme-prod.${n}`).toSorted());
    const byName = new Map(topics.map((t) => [t.spec.topicName as string, t.spec as { partitions: number; replicas: number; config: Record<string, unknown> }]));
    for (const spec of specs) {
      const topic = byName.get(`acme-prod.${spec.name}`)!;
      expect(topic.partitions, spec.name).toBe(24);
      expect(topic.replicas).toBe(3);
      expect(topic.config['min.insync.replicas']).toBe(2);
      expect(topic.config['cleanup.policy'], spec.name).toBe(spec.compacted ? 'compact' : undefined);
      for (const [k, v] of Object.entries(spec.config ?? {})) expect(topic.config[k], `${spec.name} ${k}`).toBe(v);
    }
    expect(byName.get('acme-prod.memory.events')?.config['retention.ms']).toBe('-1');
    expect(byName.get('acme-prod.policy.changes')?.config['retention.ms']).toBe('-1');
  });

  it("gives each service the command, variables and key files its env schema reads, and nothing else", () => {
    for (const set of VALUE_SETS) {
      const deployments = renderSet(set).filter((o) => o.kind === 'Deployment');
      const expectedServices = Object.keys(topology.services).filter((s) => s !== 'vector-indexer' || valuesOf(set).config.MEMORY_SEMANTIC !== 'off');
      expect(deployments.map(componentOf).toSorted(), set).toEqual(expectedServices.toSorted());
      for (const deployment of deployments) {
        const service = componentOf(deployment);
        const pod = podOf(deployment);
        const [container] = pod.containers;
        const reads = new Set(topology.services[service]!.variables.map((v) => v.name));
        const names = container!.env.map((e) => e.name);
        expect(container!.command).toEqual(serviceCommand(service as DeployedService));
        // Each variable set is one the service reads (or OpenTelemetry's, which every one reads), once.
        expect(names.filter((n) => !reads.has(n) && !n.startsWith('OTEL_')), `${set} ${service}`).toEqual([]);
        expect(new Set(names).size).toBe(names.length);
        for (const v of topology.services[service]!.variables.filter((v) => v.required)) expect(names, `${set} ${service}`).toContain(v.name);
        // Key files: mounted read-only, only the ones this service reads, never a value in the env.
        const files = Object.values(topology.services[service]!.secretFiles);
        const keys = pod.volumes.find((v) => v.name === 'keys');
        if (files.length === 0) expect(keys, service).toBeUndefined();
        else if (keys?.secret) expect(keys.secret.items.map((i) => i.key).toSorted()).toEqual(files.toSorted());
        else expect(keys?.csi, service).toBeDefined();
        expect(names).not.toContain('MEMORY_MASTER_KEY');
      }
    }
  });

  it("passes OpenTelemetry's variables to every service, and a service's own value over the shared one, false and 0 included", () => {
    const deployments = render('-f', valuesFile('production'), '--set', 'config.MEMORY_QUERY_AUDIT=on', '--set', 'services.retrieval-broker.env.MEMORY_QUERY_AUDIT=off',
      '--set', 'config.MEMORY_PRODUCTION=true', '--set', 'services.projector.env.MEMORY_PRODUCTION=false', '--set', 'services.write-admission.env.MEMORY_KAFKA_REPLICATION_FACTOR=0')
      .filter((o) => o.kind === 'Deployment');
    for (const deployment of deployments) {
      expect(podOf(deployment).containers[0]!.env, componentOf(deployment)).toContainEqual({ name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: 'http://otel-collector.observability:4318' });
    }
    const broker = deployments.find((d) => componentOf(d) === 'retrieval-broker')!;
    expect(podOf(broker).containers[0]!.env).toContainEqual({ name: 'MEMORY_QUERY_AUDIT', value: 'off' });
    const env = (service: string) => podOf(deployments.find((d) => componentOf(d) === service)!).containers[0]!.env;
    expect(env('projector')).toContainEqual({ name: 'MEMORY_PRODUCTION', value: 'false' });
    expect(env('write-admission')).toContainEqual({ name: 'MEMORY_KAFKA_REPLICATION_FACTOR', value: '0' });
  });

  it('runs every pod as non-root on a read-only root filesystem, without a service account token, with probes on its health endpoints', () => {
    for (const deployment of renderSet('minimal').filter((o) => o.kind === 'Deployment')) {
      const pod = podOf(deployment) as PodSpec & { automountServiceAccountToken: boolean; securityContext: { runAsNonRoot: boolean } };
      const container = pod.containers[0] as Container & {
        securityContext: { readOnlyRootFilesystem: boolean; allowPrivilegeEscalation: boolean; capabilities: { drop: string[] } };
        readinessProbe: { httpGet: { path: string } }; livenessProbe: { httpGet: { path: string } };
      };
      expect(pod.securityContext.runAsNonRoot).toBe(true);
      expect(pod.automountServiceAccountToken).toBe(false);
      expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
      expect(container.readinessProbe.httpGet.path).toBe('/readyz');
      expect(container.livenessProbe.httpGet.path).toBe('/healthz');
      // The health server must answer the kubelet and Prometheus on the pod's address.
      expect(container.env).toContainEqual({ name: 'HEALTH_HOST', value: '0.0.0.0' });
    }
  });

  it('refuses values that would deploy a broken or unsafe memory, naming the value', () => {
    expect(refusal('--set', 'config.KAFKA_BROKER=x:9092')).toContain('config.KAFKA_BROKER: no service reads this variable');
    expect(refusal('--set', 'config.MEMORY_MASTER_KEY=abc')).toContain('config.MEMORY_MASTER_KEY: the chart sets this variable itself');
    expect(refusal('--set', 'secrets.existingSecret=')).toContain('secrets: name secrets.existingSecret or secrets.csi');
    expect(refusal('--set', 'config.KAFKA_BROKERS=')).toContain('config.KAFKA_BROKERS: required by');
    expect(refusal('--set', 'services.projector.autoscaling.maxReplicas=13'))
      .toContain('services.projector.autoscaling.maxReplicas (13) exceeds partitions (12)');
    expect(refusal('--set', 'services.projector.env.MEMORY_PORT=1')).toContain('services.projector.env.MEMORY_PORT: the chart sets this variable itself');
    // values.schema.json: types and unknown blocks.
    expect(refusal('--set', 'partitions=twelve')).toMatch(/partitions/);
    expect(refusal('--set', 'services.write-admision.replicas=2')).toMatch(/write-admision/);
  });

  it('carries the tested alert rules verbatim in its PrometheusRule', () => {
    const rule = renderSet('minimal').find((o) => o.kind === 'PrometheusRule');
    expect(rule?.spec).toEqual(parseYaml(readFileSync(path.join(CHART, 'files/alerts.yaml'), 'utf8')));
  });

  it('passes promtool check rules and promtool test rules, with a test for every alert', () => {
    const promtool = (...args: string[]) => spawnSync(path.join(tools, 'bin/promtool'), args, { cwd: CHART, encoding: 'utf8' });
    const checked = promtool('check', 'rules', 'files/alerts.yaml');
    expect(checked.status, checked.stdout + checked.stderr).toBe(0);
    const tested = promtool('test', 'rules', ...readdirSync(path.join(CHART, 'tests')).filter((f) => f.endsWith('.test.yaml')).map((f) => `tests/${f}`));
    expect(tested.status, tested.stdout + tested.stderr).toBe(0);
    expect(tested.stdout).toContain('SUCCESS');
    const alerts = (parseYaml(readFileSync(path.join(CHART, 'files/alerts.yaml'), 'utf8')) as { groups: Array<{ rules: Array<{ alert: string }> }> })
      .groups.flatMap((g) => g.rules.map((r) => r.alert));
    const tests = parseYaml(readFileSync(path.join(CHART, 'tests/alerts.test.yaml'), 'utf8')) as {
      tests: Array<{ alert_rule_test: Array<{ alertname: string; exp_alerts?: unknown[] }> }>;
    };
    // Each alert is seen firing at least once (and most are seen silent on a near miss).
    const fired = new Set(tests.tests.flatMap((t) => t.alert_rule_test.filter((a) => (a.exp_alerts ?? []).length > 0).map((a) => a.alertname)));
    expect([...fired].toSorted()).toEqual(alerts.toSorted());
    // The list: lag, dead letters, deletion deadline/failure, receipt signing, revocation, 5xx, not ready.
    expect(alerts.length).toBeGreaterThanOrEqual(8);
  });
});
