// deploy/kubernetes: the base and the example overlay, rendered by `kubectl kustomize` as an
// operator would, every object validated against the Kubernetes (and Prometheus Operator)
// schemas, then checked against the bot itself: selectors find the pods, probes ask for paths it
// serves on PORT, the ServiceMonitor scrapes METRICS_PORT (PORT never serves /metrics), it reads
// every variable the Deployment sets, the Secret template holds every key the
// Deployment takes from it, and the ConfigMap's file passes its configuration loader. The MSP
// host runs in a container of its own, as another user, without the Secret, on a socket the
// bot's host command connects to (test/unit/msp/socketBridge.test.ts runs that bridge). The
// `# patch:` snippets of deploy/kubernetes/README.md (HTTP mode, Redis Sentinel and Cluster) are
// applied to the base and checked the same way, and so is the network-policy component.
//
// Without kubectl the rendering tests are skipped with a note, unless REQUIRE_KUBECTL=1 (.ci/run
// sets it after installing Debian's kubernetes-client), which makes that a failure.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Secret, Service } from 'kubernetes-models/v1';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, test } from 'vitest';
import { parse } from 'yaml';
import type { Config } from '../../../src/config/config.js';
import { healthRoutes } from '../../../src/slack/healthRoutes.js';
import { metricsRoute } from '../../../src/slack/metrics/metricsRoute.js';
import { PromMetrics } from '../../../src/slack/metrics/promMetrics.js';
import { SHUTDOWN_BUDGET } from '../../../src/wiring/shutdown.js';
import { PROJECT_ROOT } from '../../support/bot.js';
import { botVariables, loadObserved } from '../../support/botVariables.js';
import { FAKE_SLACK_APP_TOKEN, FAKE_SLACK_BOT_TOKEN } from '../../support/fakeSecrets.js';
import { findKubectl, type KubeObject, kustomize } from '../../support/kubectl.js';

const DEPLOY = join(PROJECT_ROOT, 'deploy', 'kubernetes');
const kubectl = findKubectl();
const INSTALL_KUBECTL =
  'Install it with `sudo apt-get install -y kubernetes-client`, or set KUBECTL to a kubectl binary (.ci/run installs it and sets REQUIRE_KUBECTL=1).';

/** The schema of each kind we ship. A kind missing here fails validation: add its model. */
const MODELS: Record<string, { new (data: never): { validate(): void } }> = {
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
};

/** Throws, naming the object, if it breaks its kind's schema or its kind has none here. */
function validate(object: KubeObject): void {
  const where = `${object.kind} ${object.metadata?.name}`;
  const Model = MODELS[`${object.apiVersion}/${object.kind}`];
  if (!Model) throw new Error(`${where}: no schema for ${object.apiVersion} ${object.kind}`);
  try {
    new Model(object as never).validate();
  } catch (error) {
    throw new Error(`${where}: ${(error as Error).message}`);
  }
}

// Typed views of the fields the checks read; validate() has checked their shapes.
interface Probe {
  httpGet?: { path?: string; port?: string | number };
}
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string }; fieldRef?: { fieldPath: string } };
}
interface Container {
  name: string;
  image: string;
  command?: string[];
  ports?: Array<{ name?: string; containerPort: number }>;
  env?: EnvVar[];
  envFrom?: Array<{ secretRef?: { name: string }; configMapRef?: { name: string } }>;
  volumeMounts?: Array<{ name: string; mountPath: string }>;
  startupProbe?: Probe;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  lifecycle?: { preStop?: { exec?: { command?: string[] }; sleep?: { seconds: number } } };
  securityContext?: {
    runAsNonRoot?: boolean;
    runAsUser?: number;
    runAsGroup?: number;
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    capabilities?: { drop?: string[] };
    seccompProfile?: { type: string };
  };
}
interface PodSpec {
  containers: Container[];
  volumes?: Array<{
    name: string;
    configMap?: { name: string };
    secret?: { secretName: string };
    projected?: unknown;
    emptyDir?: unknown;
  }>;
  securityContext?: {
    runAsNonRoot?: boolean;
    runAsUser?: number;
    runAsGroup?: number;
    fsGroup?: number;
    seccompProfile?: { type: string };
  };
  shareProcessNamespace?: boolean;
  automountServiceAccountToken?: boolean;
  terminationGracePeriodSeconds?: number;
  topologySpreadConstraints?: Array<{ labelSelector?: { matchLabels?: Record<string, string> } }>;
  affinity?: { podAntiAffinity?: unknown };
}
interface DeploymentSpec {
  replicas: number;
  selector: { matchLabels: Record<string, string> };
  template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
}

function only(objects: KubeObject[], kind: string): KubeObject {
  const found = objects.filter((o) => o.kind === kind);
  expect(
    found.map((o) => o.metadata.name),
    `one ${kind}`,
  ).toHaveLength(1);
  return found[0]!;
}

/** The Deployment, its pod, the bot's container (named as the Deployment) and the host's. */
function deploymentOf(objects: KubeObject[]): {
  spec: DeploymentSpec;
  pod: PodSpec;
  bot: Container;
  host: Container | undefined;
} {
  const deployment = only(objects, 'Deployment');
  const spec = deployment.spec as DeploymentSpec;
  const { containers } = spec.template.spec;
  const bot = containers.find((c) => c.name === deployment.metadata.name);
  expect(bot, `a container named ${deployment.metadata.name}`).toBeDefined();
  return { spec, pod: spec.template.spec, bot: bot!, host: containers.find((c) => c.name === 'msp-host') };
}

/** The user a container runs as: its own runAsUser, else the pod's. */
function userOf(pod: PodSpec, container: Container): number | undefined {
  return container.securityContext?.runAsUser ?? pod.securityContext?.runAsUser;
}

/** The seconds a container's preStop hook waits (an exec `sleep N`). */
function preStopSeconds(container: Container): number {
  const command = container.lifecycle?.preStop?.exec?.command ?? [];
  expect(command, `${container.name}: preStop is an exec sleep`).toHaveLength(2);
  expect(command[0]).toBe('sleep');
  return Number(command[1]);
}

/** Whether `selector` selects objects labelled `labels`: every pair it asks for is there. */
function selects(selector: Record<string, string> | undefined, labels: Record<string, string>): boolean {
  const pairs = Object.entries(selector ?? {});
  return pairs.length > 0 && pairs.every(([key, value]) => labels[key] === value);
}

/**
 * The GET paths the bot serves on PORT or on METRICS_PORT, from its own route tables as
 * createSlackApp.ts gives them out: /metrics on METRICS_PORT alone.
 */
function servedPaths(on: 'PORT' | 'METRICS_PORT'): string[] {
  const up = () => true;
  const probe = { redis: up, slack: up, hosts: up, whyDown: () => undefined };
  const routes =
    on === 'PORT'
      ? healthRoutes(probe, 'readyOnly')
      : [
          ...healthRoutes(probe, 'full'),
          metricsRoute(new PromMetrics({ routes: [], hosts: [] }), pino({ level: 'silent' })),
        ];
  return routes
    .filter((route) => [route.method].flat().some((method) => method.toUpperCase() === 'GET'))
    .map((route) => route.path);
}

/** The container port a Service's `targetPort` names, by name or by number. */
function containerPortOf(bot: Container, target: string | number): number | undefined {
  return typeof target === 'number' ? target : bot.ports?.find((p) => p.name === target)?.containerPort;
}

/** The port METRICS_PORT sets in the bot's container: where /metrics is, since PORT never serves it. */
function metricsPortOf(bot: Container): number {
  const value = bot.env?.find((e) => e.name === 'METRICS_PORT')?.value;
  expect(value, 'the bot container sets METRICS_PORT').toBeDefined();
  return Number(value);
}

interface ServicePort {
  name: string;
  port: number;
  targetPort: string | number;
}

type ServiceObject = KubeObject & {
  spec: { type?: string; selector: Record<string, string>; ports: ServicePort[] };
};

/** The Services among `objects`. */
function servicesOf(objects: KubeObject[]): ServiceObject[] {
  return objects.filter((o) => o.kind === 'Service') as ServiceObject[];
}

/** The one Service with a port named `portName`: each port of the bot has a Service of its own. */
function serviceWithPort(objects: KubeObject[], portName: string): ServiceObject {
  const found = servicesOf(objects).filter((s) => s.spec.ports.some((p) => p.name === portName));
  expect(
    found.map((s) => s.metadata.name),
    `one Service with a port ${portName}`,
  ).toHaveLength(1);
  return found[0]!;
}

/**
 * Each endpoint a ServiceMonitor scrapes is a port of the Service that leads to the bot's
 * METRICS_PORT, and a path served there; not PORT, which answers /metrics 404.
 */
function checkScraped(
  bot: Container,
  servicePorts: ServicePort[],
  endpoints: Array<{ port: string; path: string }>,
): void {
  expect(endpoints.length).toBeGreaterThan(0);
  for (const endpoint of endpoints) {
    const servicePort = servicePorts.find((p) => p.name === endpoint.port);
    expect(servicePort, `a Service port named ${endpoint.port}`).toBeDefined();
    expect(containerPortOf(bot, servicePort!.targetPort), `${endpoint.port} leads to METRICS_PORT`).toBe(
      metricsPortOf(bot),
    );
    expect(servedPaths('METRICS_PORT')).toContain(endpoint.path);
    expect(servedPaths('PORT')).not.toContain(endpoint.path);
  }
}

function readYaml<T>(...path: string[]): T {
  return parse(readFileSync(join(DEPLOY, ...path), 'utf8')) as T;
}

const secretTemplate = readYaml<KubeObject & { stringData: Record<string, string> }>('secret.example.yaml');
const serviceMonitorFile = readYaml<KubeObject>('components', 'servicemonitor', 'servicemonitor.yaml');

/** The base's Services, as its files have them. */
function baseServiceFiles(): ServiceObject[] {
  const kustomization = readYaml<{ resources: string[] }>('base', 'kustomization.yaml');
  return kustomization.resources
    .map((file) => readYaml<KubeObject>('base', file))
    .filter((o) => o.kind === 'Service') as ServiceObject[];
}

/** Every variable the Deployment sets is one the bot reads; each Secret key it takes is in the template. */
function checkEnvironment(objects: KubeObject[]): void {
  const env = deploymentOf(objects).bot.env ?? [];
  expect(env.map((e) => e.name).filter((name) => !botVariables().has(name))).toEqual([]);
  for (const { name, valueFrom } of env) {
    const ref = valueFrom?.secretKeyRef;
    if (!ref) continue;
    expect(ref.name, name).toBe(secretTemplate.metadata.name);
    expect(Object.keys(secretTemplate.stringData), name).toContain(ref.key);
  }
}

/** Token-shaped values for the Secret's keys, as an operator fills them in. */
const FILLED_SECRET: Record<string, string> = {
  SLACK_BOT_TOKEN: FAKE_SLACK_BOT_TOKEN,
  SLACK_APP_TOKEN: FAKE_SLACK_APP_TOKEN,
  SLACK_SIGNING_SECRET: 'f'.repeat(32),
  REDIS_URL: `redis://:${'p'.repeat(24)}@redis.example.internal:6379`,
  REDIS_PASSWORD: 'p'.repeat(24),
  COUNTERSIGN_REPLICA_SECRET: 'r'.repeat(48),
};

/**
 * The configuration the bot loads in the rendered Deployment's pod: the environment as the
 * kubelet builds it (literals, the Secret filled in, the pod's name) and the ConfigMap's file,
 * written under `scratch` where COUNTERSIGN_CONFIG's mount would put it. Throws what the loader
 * throws.
 */
function podConfig(objects: KubeObject[], scratch: string): Config {
  const { pod, bot } = deploymentOf(objects);
  const configMap = only(objects, 'ConfigMap') as KubeObject & { data: Record<string, string> };
  const volume = pod.volumes?.find((v) => v.configMap?.name === configMap.metadata.name);
  expect(volume, 'a volume of the generated ConfigMap').toBeDefined();
  const mount = bot.volumeMounts?.find((m) => m.name === volume!.name);
  const configPath = bot.env?.find((e) => e.name === 'COUNTERSIGN_CONFIG')?.value ?? '';
  expect(configPath.startsWith(`${mount?.mountPath}/`), 'COUNTERSIGN_CONFIG is in the mount').toBe(true);
  const file = configPath.slice(`${mount!.mountPath}/`.length);
  expect(Object.keys(configMap.data)).toContain(file);
  writeFileSync(join(scratch, file), configMap.data[file]!);
  const podEnv = Object.fromEntries(
    (bot.env ?? []).map((e) => {
      if (e.name === 'COUNTERSIGN_CONFIG') return [e.name, join(scratch, file)];
      const ref = e.valueFrom?.secretKeyRef;
      if (ref) {
        expect(FILLED_SECRET, `a value to fill ${ref.key} with`).toHaveProperty(ref.key);
        return [e.name, FILLED_SECRET[ref.key]!];
      }
      if (e.valueFrom?.fieldRef) return [e.name, 'countersign-5d8f7c9b6-x2x7q'];
      return [e.name, e.value ?? ''];
    }),
  );
  return loadObserved(podEnv).config;
}

/** The YAML blocks of deploy/kubernetes/README.md that start with `# patch: <name>`, by name. */
function readmePatches(): Map<string, string> {
  const readme = readFileSync(join(DEPLOY, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/^( *)```yaml\n([\s\S]*?)^\1```/gm)].map(([, indent, body]) =>
    body!
      .split('\n')
      .map((line) => line.slice(indent!.length))
      .join('\n'),
  );
  return new Map(
    blocks.flatMap((block) => {
      const name = /^# patch: ([\w-]+)/.exec(block)?.[1];
      return name ? [[name, block] as const] : [];
    }),
  );
}

test.runIf(!kubectl && process.env.REQUIRE_KUBECTL === '1')('kubectl is installed', () => {
  throw new Error(`REQUIRE_KUBECTL=1, but kubectl was not found. ${INSTALL_KUBECTL}`);
});
if (!kubectl && process.env.REQUIRE_KUBECTL !== '1')
  process.stderr.write(
    `kubectl is not installed, so deploy/kubernetes is not rendered. ${INSTALL_KUBECTL}\n`,
  );
if (kubectl && !kubectl.components)
  process.stderr.write(
    `kubectl ${kubectl.version} embeds kustomize v2, which has no Components (kubectl 1.21 or later has): ` +
      'the example overlay and the network-policy component are not rendered; the base is, and the ServiceMonitor is checked from its file.\n',
  );

test('validation refuses a kind it has no schema for, and an object that breaks its schema', () => {
  expect(() =>
    validate({ apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name: 'x' } }),
  ).toThrow(/^Ingress x: no schema for networking.k8s.io\/v1 Ingress/);
  const service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'x' },
    spec: { ports: [{ port: 'http' }] },
  };
  expect(() => validate(service)).toThrow(/^Service x: .*port/);
});

describe('the Secret template (deploy/kubernetes/secret.example.yaml)', () => {
  it('is a valid Secret whose keys are all variables the bot reads', () => {
    validate(secretTemplate);
    const keys = Object.keys(secretTemplate.stringData);
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.filter((key) => !botVariables().has(key))).toEqual([]);
  });

  it('holds no token, and each token placeholder, left as it is, stops start-up naming its variable', () => {
    const text = readFileSync(join(DEPLOY, 'secret.example.yaml'), 'utf8');
    expect(text).not.toMatch(/\b(?:xox[abposre]|xapp)-[0-9A-Za-z-]{4,}/);
    const filled = {
      SLACK_BOT_TOKEN: FAKE_SLACK_BOT_TOKEN,
      SLACK_APP_TOKEN: FAKE_SLACK_APP_TOKEN,
      SLACK_CHANNEL: 'C0123456789',
      MSP_HOST_COMMAND: 'muse serve',
      REDIS_URL: FILLED_SECRET.REDIS_URL!,
    };
    for (const key of [
      'SLACK_BOT_TOKEN',
      'SLACK_APP_TOKEN',
      'SLACK_SIGNING_SECRET',
      'COUNTERSIGN_REPLICA_SECRET',
    ]) {
      const placeholder = secretTemplate.stringData[key];
      expect(placeholder, key).toBeDefined();
      expect(() => loadObserved({ ...filled, [key]: placeholder! }), key).toThrow(
        new RegExp(`^${key} still holds a placeholder`),
      );
    }
  });
});

/** Every key of a parsed YAML tree, at any depth. */
function keysOf(node: unknown): string[] {
  if (Array.isArray(node)) return node.flatMap(keysOf);
  if (node !== null && typeof node === 'object')
    return Object.entries(node).flatMap(([key, value]) => [key, ...keysOf(value)]);
  return [];
}

// The file becomes a ConfigMap, which the `view` ClusterRole reads: a PagerDuty routingKey or a
// host's env value written in it is readable by anyone who may view the namespace.
describe('the configuration file of the base (deploy/kubernetes/base/countersign.yml)', () => {
  it('holds no secret: no routingKey, no host env values (PAGERDUTY_ROUTING_KEY is in the Secret)', () => {
    const config = readYaml<{ hosts?: Array<{ env?: Record<string, string> }> }>('base', 'countersign.yml');
    expect(keysOf(config)).not.toContain('routingKey');
    for (const host of config.hosts ?? []) expect(host.env ?? {}).toEqual({});
  });
});

describe('the Redis URLs of deploy/kubernetes (the Secret template and README.md)', () => {
  // The MSP host, and the agent it runs, share the bot's pod and so its network: they reach
  // Redis as the bot does, and a Redis without a password would let the agent write itself a
  // grant.
  const REDIS_URL = /\brediss?(?:\+sentinel)?:\/\/[^\s`"']+/g;

  it('give every Redis a password, the Secret template’s REDIS_URL first', () => {
    expect(new URL(secretTemplate.stringData.REDIS_URL!).password).not.toBe('');
    for (const file of ['secret.example.yaml', 'README.md']) {
      const urls = [...readFileSync(join(DEPLOY, file), 'utf8').matchAll(REDIS_URL)].map((m) => m[0]);
      const written = urls.filter((url) => !/^[\w+]+:\/\/…$/.test(url));
      expect(written.length, file).toBeGreaterThan(0);
      for (const url of written) expect(url, `${file}: ${url}`).toMatch(/^[\w+]+:\/\/[^/@]*:[^/@]+@/);
    }
  });
});

describe('the ServiceMonitor component (deploy/kubernetes/components/servicemonitor)', () => {
  it('is a valid ServiceMonitor scraping /metrics on the base Service’s port to METRICS_PORT, whose labels it selects', () => {
    validate(serviceMonitorFile);
    const service = serviceWithPort(baseServiceFiles(), 'metrics');
    const spec = serviceMonitorFile.spec as {
      selector: { matchLabels: Record<string, string> };
      endpoints: Array<{ port: string; path: string }>;
    };
    expect(selects(spec.selector.matchLabels, service.metadata.labels ?? {})).toBe(true);
    checkScraped(
      deploymentOf([readYaml<KubeObject>('base', 'deployment.yaml')]).bot,
      service.spec.ports,
      spec.endpoints,
    );
    expect(spec.endpoints.map((e) => e.port)).toEqual(['metrics']);
  });

  it('selects the metrics Service only, not the one an ingress or a LoadBalancer may expose', () => {
    const { matchLabels } = (serviceMonitorFile.spec as { selector: { matchLabels: Record<string, string> } })
      .selector;
    const selected = baseServiceFiles().filter((s) => selects(matchLabels, s.metadata.labels ?? {}));
    expect(selected.map((s) => s.metadata.name)).toEqual([
      serviceWithPort(baseServiceFiles(), 'metrics').metadata.name,
    ]);
    expect(selected[0]!.spec.ports.map((p) => p.name)).not.toContain('http');
  });
});

describe.runIf(kubectl)('the base (deploy/kubernetes/base), rendered by kubectl kustomize', () => {
  let objects: KubeObject[] = [];
  let scratch = '';
  beforeAll(async () => {
    objects = await kustomize(kubectl!, join(DEPLOY, 'base'));
    scratch = mkdtempSync(join(tmpdir(), 'countersign-k8s-'));
  });
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('holds a Deployment, two Services, a PodDisruptionBudget and a ConfigMap, each valid for its schema', () => {
    expect(objects.map((o) => o.kind).sort()).toEqual([
      'ConfigMap',
      'Deployment',
      'PodDisruptionBudget',
      'Service',
      'Service',
    ]);
    for (const object of objects) validate(object);
  });

  it('runs two replicas, spread over nodes, that the Service and the PodDisruptionBudget select', () => {
    const { spec, pod } = deploymentOf(objects);
    const podLabels = spec.template.metadata.labels;
    expect(spec.replicas).toBe(2);
    expect(selects(spec.selector.matchLabels, podLabels)).toBe(true);
    for (const service of servicesOf(objects))
      expect(selects(service.spec.selector, podLabels), service.metadata.name).toBe(true);
    const pdb = only(objects, 'PodDisruptionBudget').spec as {
      selector: { matchLabels: Record<string, string> };
    };
    expect(selects(pdb.selector.matchLabels, podLabels)).toBe(true);
    const spread = pod.topologySpreadConstraints ?? [];
    expect(spread.length > 0 || pod.affinity?.podAntiAffinity !== undefined).toBe(true);
    for (const constraint of spread)
      expect(selects(constraint.labelSelector?.matchLabels, podLabels)).toBe(true);
  });

  it('probes paths the bot serves (readiness /readyz, liveness /healthz) on the port PORT names', () => {
    const { bot } = deploymentOf(objects);
    const served = servedPaths('PORT');
    const port = Number(bot.env?.find((e) => e.name === 'PORT')?.value ?? 3000);
    const probes = {
      startupProbe: bot.startupProbe,
      readinessProbe: bot.readinessProbe,
      livenessProbe: bot.livenessProbe,
    };
    for (const [name, probe] of Object.entries(probes)) {
      expect(probe?.httpGet, name).toBeDefined();
      expect(served, name).toContain(probe!.httpGet!.path);
      expect(containerPortOf(bot, probe!.httpGet!.port!), `${name} port`).toBe(port);
    }
    expect(bot.readinessProbe?.httpGet?.path).toBe('/readyz');
    expect(bot.livenessProbe?.httpGet?.path).toBe('/healthz');
    for (const { targetPort } of servicesOf(objects).flatMap((s) => s.spec.ports)) {
      expect(bot.ports?.some((p) => p.name === targetPort || p.containerPort === targetPort)).toBe(true);
    }
  });

  it('serves /metrics on METRICS_PORT, a container port and a Service port named `metrics`, apart from PORT', () => {
    const { bot } = deploymentOf(objects);
    const config = podConfig(objects, scratch);
    expect(config.metricsPort).toBe(metricsPortOf(bot));
    expect(config.metricsPort).not.toBe(config.port);
    expect(bot.ports?.find((p) => p.name === 'metrics')?.containerPort).toBe(config.metricsPort);
    const metrics = serviceWithPort(objects, 'metrics').spec.ports.find((p) => p.name === 'metrics');
    expect(metrics, 'a Service port named metrics').toBeDefined();
    expect(containerPortOf(bot, metrics!.targetPort)).toBe(config.metricsPort);
    // The port Slack would reach in HTTP mode leads to PORT, which has no /metrics.
    const http = serviceWithPort(objects, 'http').spec.ports.find((p) => p.name === 'http');
    expect(containerPortOf(bot, http!.targetPort)).toBe(config.port);
  });

  // An overlay that makes the `http` Service a LoadBalancer or routes an ingress to it (HTTP
  // mode) would publish every port of that Service: /metrics and /readyz's reasons too.
  it('exposes `http` and `metrics` in Services of their own', () => {
    for (const service of servicesOf(objects)) {
      const names = service.spec.ports.map((p) => p.name);
      expect(names.includes('http') && names.includes('metrics'), service.metadata.name).toBe(false);
    }
    expect(serviceWithPort(objects, 'http').metadata.name).toBe('countersign');
  });

  it('sets only variables the bot reads, and takes from the Secret only keys its template holds', () => {
    checkEnvironment(objects);
  });

  it('mounts the ConfigMap where COUNTERSIGN_CONFIG points, and the bot accepts it with the filled-in Secret', () => {
    const config = podConfig(objects, scratch);
    expect(config.slack.mode).toBe('socket');
    expect(config.msp.hosts.length).toBeGreaterThan(0);
    expect(config.routes.length).toBeGreaterThan(0);
  });

  it('runs unprivileged: non-root, read-only root filesystem, no capabilities, RuntimeDefault seccomp', () => {
    const { pod, bot } = deploymentOf(objects);
    const context = bot.securityContext ?? {};
    expect(context.runAsNonRoot ?? pod.securityContext?.runAsNonRoot).toBe(true);
    expect(pod.securityContext?.runAsUser).toBeGreaterThan(0);
    expect((context.seccompProfile ?? pod.securityContext?.seccompProfile)?.type).toBe('RuntimeDefault');
    expect(context.allowPrivilegeEscalation).toBe(false);
    expect(context.readOnlyRootFilesystem).toBe(true);
    expect(context.capabilities?.drop).toContain('ALL');
    expect(pod.automountServiceAccountToken).toBe(false);
  });

  it('asks for resources, and gives shutdown more time than the bot’s own budget', () => {
    const { pod, bot } = deploymentOf(objects);
    expect(bot.resources?.requests?.cpu).toBeDefined();
    expect(bot.resources?.requests?.memory).toBeDefined();
    expect(bot.resources?.limits?.memory).toBeDefined();
    expect((pod.terminationGracePeriodSeconds ?? 30) * 1000).toBeGreaterThan(SHUTDOWN_BUDGET.totalMs);
  });

  // SIGTERM and the pod's removal from the Service's endpoints happen at once; the bot stops
  // taking Slack requests at SIGTERM, so without a wait a click routed to it then fails.
  it('waits before SIGTERM for the Service to stop routing to the pod, within the grace period', () => {
    const { pod, bot } = deploymentOf(objects);
    const command = bot.lifecycle?.preStop?.exec?.command ?? [];
    expect(command).toHaveLength(2);
    expect(command[0]).toBe('sleep');
    const waitSeconds = Number(command[1]);
    expect(waitSeconds).toBeGreaterThanOrEqual(3);
    expect((pod.terminationGracePeriodSeconds ?? 30) * 1000).toBeGreaterThan(
      waitSeconds * 1000 + SHUTDOWN_BUDGET.totalMs,
    );
  });

  // As the bot's user, in the bot's container, the agent could read the bot's
  // /proc/<pid>/environ (the tokens, REDIS_URL with its password) whatever environment the host
  // was given, and write itself a grant in Redis.
  describe('the MSP host', () => {
    it('runs in a container of its own, as another non-root user, in a process namespace of its own', () => {
      const { pod, bot, host } = deploymentOf(objects);
      expect(host, 'a container msp-host').toBeDefined();
      expect(pod.containers).toHaveLength(2);
      const botUser = userOf(pod, bot);
      const hostUser = userOf(pod, host!);
      expect(botUser).toBeGreaterThan(0);
      expect(hostUser).toBeGreaterThan(0);
      expect(hostUser).not.toBe(botUser);
      expect(host!.securityContext?.runAsNonRoot ?? pod.securityContext?.runAsNonRoot).toBe(true);
      expect(pod.shareProcessNamespace ?? false).toBe(false);
    });

    it('gets nothing of the Secret, the configuration or the bot’s settings: no env from them, no volume of them', () => {
      const { pod, host } = deploymentOf(objects);
      expect(host).toBeDefined();
      const env = host!.env ?? [];
      expect(env.filter((e) => e.valueFrom?.secretKeyRef !== undefined).map((e) => e.name)).toEqual([]);
      expect(env.map((e) => e.name).filter((name) => botVariables().has(name))).toEqual([]);
      expect(host!.envFrom ?? []).toEqual([]);
      const volumes = new Map((pod.volumes ?? []).map((v) => [v.name, v]));
      for (const mount of host!.volumeMounts ?? []) {
        const volume = volumes.get(mount.name);
        expect(volume?.emptyDir, `${mount.name} is an emptyDir (no Secret, no ConfigMap)`).toBeDefined();
      }
    });

    it('listens on the socket the bot’s host command connects to, on a volume both containers mount', () => {
      const { pod, bot, host } = deploymentOf(objects);
      expect(host).toBeDefined();
      const config = podConfig(objects, scratch);
      expect(config.msp.hosts).toHaveLength(1);
      const socket = /\bUNIX-CONNECT:([^\s,]+)/.exec(config.msp.hosts[0]!.command)?.[1];
      expect(socket, 'the host command is a bridge to a Unix socket').toBeDefined();
      const listen = (host!.command ?? []).find((arg) => arg.startsWith('UNIX-LISTEN:'));
      expect(listen?.split(',')[0]).toBe(`UNIX-LISTEN:${socket}`);
      const mountOf = (container: Container) =>
        container.volumeMounts?.find((m) => m.mountPath === dirname(socket!))?.name;
      expect(mountOf(bot), 'the bot mounts the socket’s directory').toBeDefined();
      expect(mountOf(host!)).toBe(mountOf(bot));
      expect(pod.volumes?.find((v) => v.name === mountOf(bot))?.emptyDir).toBeDefined();
      // Only the host's user and the volume's group (fsGroup, which the bot is given) may open it.
      expect(listen).toMatch(/,mode=660\b/);
      expect(pod.securityContext?.fsGroup).toBeGreaterThan(0);
    });

    it('runs unprivileged, as the bot does: read-only root filesystem, no capabilities, RuntimeDefault seccomp', () => {
      const { pod, host } = deploymentOf(objects);
      const context = host?.securityContext ?? {};
      expect((context.seccompProfile ?? pod.securityContext?.seccompProfile)?.type).toBe('RuntimeDefault');
      expect(context.allowPrivilegeEscalation).toBe(false);
      expect(context.readOnlyRootFilesystem).toBe(true);
      expect(context.capabilities?.drop).toContain('ALL');
      expect(host?.resources?.limits?.memory).toBeDefined();
    });

    // Kubernetes stops both containers at once; the bot stops its host itself (EOF through the
    // bridge) during its shutdown, which the host's container must outlast.
    it('outlasts the bot’s preStop wait and shutdown, within the grace period', () => {
      const { pod, bot, host } = deploymentOf(objects);
      const hostWaitMs = preStopSeconds(host!) * 1000;
      expect(hostWaitMs).toBeGreaterThanOrEqual(preStopSeconds(bot) * 1000 + SHUTDOWN_BUDGET.totalMs);
      expect((pod.terminationGracePeriodSeconds ?? 30) * 1000).toBeGreaterThan(hostWaitMs);
    });
  });
});

describe.runIf(kubectl?.components)('the example overlay (deploy/kubernetes/overlays/example)', () => {
  let base: KubeObject[] = [];
  let objects: KubeObject[] = [];
  beforeAll(async () => {
    [base, objects] = await Promise.all([
      kustomize(kubectl!, join(DEPLOY, 'base')),
      kustomize(kubectl!, join(DEPLOY, 'overlays', 'example')),
    ]);
  });

  it('adds the ServiceMonitor component to the base, every object valid and in one namespace', () => {
    expect(objects.map((o) => o.kind).sort()).toEqual([...base.map((o) => o.kind), 'ServiceMonitor'].sort());
    for (const object of objects) validate(object);
    const namespaces = new Set(objects.map((o) => o.metadata.namespace));
    expect([...namespaces]).toHaveLength(1);
    expect([...namespaces][0]).toBeTruthy();
  });

  it('scrapes the Service it renders with, on its port to METRICS_PORT, at /metrics', () => {
    const service = serviceWithPort(objects, 'metrics');
    const spec = only(objects, 'ServiceMonitor').spec as {
      selector: { matchLabels: Record<string, string> };
      endpoints: Array<{ port: string; path: string }>;
    };
    expect(selects(spec.selector.matchLabels, service.metadata.labels ?? {})).toBe(true);
    const selected = servicesOf(objects).filter((s) =>
      selects(spec.selector.matchLabels, s.metadata.labels ?? {}),
    );
    expect(selected.map((s) => s.metadata.name)).toEqual([service.metadata.name]);
    checkScraped(deploymentOf(objects).bot, service.spec.ports, spec.endpoints);
    expect(spec.endpoints.map((e) => e.path)).toEqual(['/metrics']);
  });

  it('runs images of its own (the bot, and the MSP host with socat), not the base’s placeholder names', () => {
    expect(deploymentOf(base).bot.image).toBe('countersign');
    expect(deploymentOf(objects).bot.image).not.toBe('countersign');
    expect(deploymentOf(base).host?.image).toBe('msp-host');
    expect(deploymentOf(objects).host?.image).not.toBe('msp-host');
  });
});

interface PolicyPeer {
  ipBlock?: { cidr: string; except?: string[] };
  namespaceSelector?: { matchLabels?: Record<string, string> };
  podSelector?: { matchLabels?: Record<string, string> };
}
interface PolicyRule {
  from?: PolicyPeer[];
  to?: PolicyPeer[];
  ports?: Array<{ port?: string | number; protocol?: string }>;
}

/** An IPv4 address as a number. */
function ipv4(address: string): number {
  return address.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);
}

/** Whether the IPv4 CIDR `cidr` holds `address`. */
function cidrHolds(cidr: string, address: string): boolean {
  const [base, bits] = cidr.split('/');
  const size = 2 ** (32 - Number(bits));
  return Math.floor(ipv4(base!) / size) === Math.floor(ipv4(address) / size);
}

/** Whether a rule's peer lets traffic to `address` through: an ipBlock holding it, not excepted. */
function peerAllows(peer: PolicyPeer, address: string): boolean {
  const block = peer.ipBlock;
  if (!block) return false;
  return cidrHolds(block.cidr, address) && !(block.except ?? []).some((cidr) => cidrHolds(cidr, address));
}

describe.runIf(kubectl?.components)(
  'the network-policy component (deploy/kubernetes/components/network-policy)',
  () => {
    let base: KubeObject[] = [];
    let objects: KubeObject[] = [];
    let scratch = '';
    beforeAll(async () => {
      scratch = mkdtempSync(join(tmpdir(), 'countersign-k8s-netpol-'));
      // kustomize takes no absolute path to a base or a component.
      writeFileSync(
        join(scratch, 'kustomization.yaml'),
        `resources:\n  - ${relative(scratch, join(DEPLOY, 'base'))}\n` +
          `components:\n  - ${relative(scratch, join(DEPLOY, 'components', 'network-policy'))}\n`,
      );
      [base, objects] = await Promise.all([
        kustomize(kubectl!, join(DEPLOY, 'base')),
        kustomize(kubectl!, scratch),
      ]);
    });
    afterAll(() => rmSync(scratch, { recursive: true, force: true }));

    const policy = () =>
      only(objects, 'NetworkPolicy').spec as {
        podSelector: { matchLabels?: Record<string, string> };
        policyTypes: string[];
        ingress?: PolicyRule[];
        egress?: PolicyRule[];
      };

    it('adds a valid NetworkPolicy to the base, on the Deployment’s pods, for ingress and egress', () => {
      expect(objects.map((o) => o.kind).sort()).toEqual([...base.map((o) => o.kind), 'NetworkPolicy'].sort());
      for (const object of objects) validate(object);
      const { spec } = deploymentOf(objects);
      expect(selects(policy().podSelector.matchLabels, spec.template.metadata.labels)).toBe(true);
      expect([...policy().policyTypes].sort()).toEqual(['Egress', 'Ingress']);
    });

    it('lets in PORT and METRICS_PORT only, each from labelled namespaces', () => {
      const { bot } = deploymentOf(objects);
      const allowed = (policy().ingress ?? []).flatMap((rule) => {
        expect(rule.from?.length, 'each ingress rule names whom it lets in').toBeGreaterThan(0);
        for (const peer of rule.from ?? [])
          expect(Object.keys(peer.namespaceSelector?.matchLabels ?? {}).length).toBeGreaterThan(0);
        expect(rule.ports?.length, 'each ingress rule names its ports').toBeGreaterThan(0);
        return (rule.ports ?? []).map((p) => containerPortOf(bot, p.port!));
      });
      const config = podConfig(objects, scratch);
      expect([...new Set(allowed)].sort()).toEqual([config.port, config.metricsPort].sort());
    });

    // The MSP host shares the pod's network: egress open to everything would let the agent reach
    // the cloud's metadata service (node credentials) and anything inside the cluster.
    it('lets out DNS, Redis and HTTPS only, never to the cloud metadata address', () => {
      const egress = policy().egress ?? [];
      const ports = egress.flatMap((rule) => {
        expect(rule.ports?.length, 'each egress rule names its ports').toBeGreaterThan(0);
        return (rule.ports ?? []).map((p) => Number(p.port));
      });
      expect([...new Set(ports)].sort((a, b) => a - b)).toEqual([53, 443, 6379]);
      const blocks = egress.flatMap((rule) => rule.to ?? []).filter((peer) => peer.ipBlock);
      expect(blocks.length, 'an ipBlock for HTTPS').toBeGreaterThan(0);
      expect(
        blocks.some((peer) => (peer.ipBlock!.except ?? []).some((c) => cidrHolds(c, '169.254.169.254'))),
      ).toBe(true);
      for (const rule of egress) {
        expect(rule.to?.length, 'each egress rule names where it lets out to').toBeGreaterThan(0);
        for (const peer of rule.to ?? []) expect(peerAllows(peer, '169.254.169.254')).toBe(false);
      }
    });
  },
);

describe.runIf(kubectl?.components)('the patches of deploy/kubernetes/README.md, applied to the base', () => {
  const patches = readmePatches();
  let scratch = '';
  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), 'countersign-k8s-patch-'));
  });
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  /** The base with one patch, rendered from an overlay in a directory of its own. */
  async function patched(name: string): Promise<KubeObject[]> {
    const dir = mkdtempSync(join(scratch, `${name}-`));
    expect(patches.has(name), `README.md has a "# patch: ${name}" block`).toBe(true);
    writeFileSync(join(dir, 'patch.yaml'), patches.get(name)!);
    // kustomize takes no absolute path to a base.
    const base = relative(dir, join(DEPLOY, 'base'));
    writeFileSync(
      join(dir, 'kustomization.yaml'),
      `resources:\n  - ${base}\npatches:\n  - path: patch.yaml\n`,
    );
    const objects = await kustomize(kubectl!, dir);
    for (const object of objects) validate(object);
    checkEnvironment(objects);
    return objects;
  }

  it('are the three this test knows', () => {
    expect([...patches.keys()].sort()).toEqual(['http-mode', 'redis-cluster', 'redis-sentinel']);
  });

  it('http-mode: the bot runs in HTTP mode, with the signing secret, /metrics still on METRICS_PORT', async () => {
    const objects = await patched('http-mode');
    const config = podConfig(objects, mkdtempSync(join(scratch, 'config-')));
    expect(config.slack.mode).toBe('http');
    // PORT is then the port Slack reaches, from the internet: it never serves /metrics.
    expect(config.metricsPort).toBe(metricsPortOf(deploymentOf(objects).bot));
    expect(config.metricsPort).not.toBe(config.port);
  });

  it('redis-sentinel: the bot asks the sentinels for the master', async () => {
    const objects = await patched('redis-sentinel');
    const config = podConfig(objects, mkdtempSync(join(scratch, 'config-')));
    expect(config.redis.kind).toBe('sentinel');
  });

  it('redis-cluster: the bot talks to a Redis Cluster', async () => {
    const objects = await patched('redis-cluster');
    const config = podConfig(objects, mkdtempSync(join(scratch, 'config-')));
    expect(config.redis.kind).toBe('cluster');
  });
});
