/**
 * deploy/kubernetes/ (issue #51): Kubernetes cannot run on these machines, so its manifests are checked against
 * frost itself. The probes' paths answer as the Deployment expects on a running `frost serve`; its port is the one
 * the container's `frost serve` arguments bind, and the Service's target; the grace period outlasts the preStop
 * pause plus frost's drain; the autoscaler scales the Deployment on a metric frost's /metrics exports. The HAProxy
 * configuration's health check is checked the same way (test/fleet-haproxy.test.ts runs it).
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Command } from 'commander';
import { registerServe } from '../clients/cli/commands/serve.ts';
import { startServer, type RunningServer } from '../serve/server.ts';
import { writeTinyModelDir } from './helpers/tiny-model.ts';

const DEPLOY = join(import.meta.dirname, '..', 'deploy');

interface Probe {
  httpGet: { path: string; port: string | number };
}
interface Container {
  args: string[];
  ports: Array<{ name: string; containerPort: number }>;
  readinessProbe: Probe;
  livenessProbe: Probe;
  startupProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  resources: { requests: { memory: string; cpu: string } };
}
interface Deployment {
  kind: 'Deployment';
  metadata: { name: string };
  spec: {
    selector: { matchLabels: Record<string, string> };
    template: {
      metadata: { labels: Record<string, string> };
      spec: { terminationGracePeriodSeconds: number; containers: Container[] };
    };
  };
}

const manifest = async <T>(file: string): Promise<T> =>
  JSON.parse(await readFile(join(DEPLOY, 'kubernetes', file), 'utf8')) as T;

/** `frost serve`'s flags as the CLI defines them, parsed from a container's arguments. */
function serveFlags(args: string[]): Record<string, unknown> {
  const program = new Command().exitOverride();
  registerServe(program);
  const serve = program.commands.find((c) => c.name() === 'serve')!;
  serve.action(() => undefined);
  program.parse(['node', 'frost', ...args]);
  return serve.opts();
}

let root: string;
let server: RunningServer;
let deployment: Deployment;
let container: Container;

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'frost-deploy-'));
  await writeTinyModelDir(join(root, 'models', 'tiny'));
  server = await startServer({
    modelsDir: join(root, 'models'),
    port: 0,
    intraOpNumThreads: 1,
    workers: 1,
    log: () => {},
  });
  deployment = await manifest<Deployment>('deployment.json');
  container = deployment.spec.template.spec.containers[0]!;
});

after(async () => {
  await server?.close();
  await rm(root, { recursive: true, force: true });
});

describe('the Kubernetes manifests against frost', () => {
  test('the container runs frost serve on the port it declares, on every interface', () => {
    assert.equal(container.args[0], 'serve');
    const flags = serveFlags(container.args);
    assert.equal(flags.host, '0.0.0.0', 'a pod must listen beyond loopback');
    const http = container.ports.find((p) => p.name === 'http');
    assert.equal(http?.containerPort, flags.port);
  });

  test("the probes' paths answer on frost serve as the Deployment expects: readiness /readyz, liveness /healthz", async () => {
    assert.equal(container.readinessProbe.httpGet.path, '/readyz');
    assert.equal(container.livenessProbe.httpGet.path, '/healthz');
    for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe!]) {
      assert.equal(probe.httpGet.port, 'http');
      const res = await fetch(`${server.url}${probe.httpGet.path}`);
      assert.equal(res.status, 200, probe.httpGet.path);
    }
  });

  test('the grace period outlasts the preStop pause plus frost drain time', () => {
    const flags = serveFlags(container.args);
    const pause = Number(container.lifecycle?.preStop?.exec?.command.at(-1));
    assert.ok(pause >= 2, 'a pause before SIGTERM, so the Service stops sending first');
    const drainS = (flags.drainTimeoutMs as number) / 1000;
    assert.ok(
      deployment.spec.template.spec.terminationGracePeriodSeconds > pause + drainS,
      `${deployment.spec.template.spec.terminationGracePeriodSeconds} s against ${pause} + ${drainS} s`,
    );
    assert.ok(container.resources.requests.memory && container.resources.requests.cpu);
  });

  test('the Service targets the port and selects the pods; the autoscaler scales on a metric frost exports', async () => {
    const service = await manifest<{
      spec: { selector: Record<string, string>; ports: Array<{ targetPort: string | number }> };
    }>('service.json');
    assert.deepEqual(service.spec.selector, deployment.spec.template.metadata.labels);
    assert.deepEqual(deployment.spec.selector.matchLabels, deployment.spec.template.metadata.labels);
    assert.equal(service.spec.ports[0]!.targetPort, 'http');
    const hpa = await manifest<{
      spec: {
        scaleTargetRef: { kind: string; name: string };
        metrics: Array<{ pods: { metric: { name: string } } }>;
      };
    }>('hpa.json');
    assert.deepEqual(hpa.spec.scaleTargetRef, {
      ...hpa.spec.scaleTargetRef,
      kind: 'Deployment',
      name: deployment.metadata.name,
    });
    const exported = await (await fetch(`${server.url}/metrics`)).text();
    for (const m of hpa.spec.metrics)
      assert.match(exported, new RegExp(`^# TYPE ${m.pods.metric.name} gauge$`, 'm'), m.pods.metric.name);
  });
});

test("HAProxy's health check is frost's readiness route", async () => {
  const config = await readFile(join(DEPLOY, 'haproxy', 'haproxy.cfg'), 'utf8');
  const check = /^\s*option httpchk GET (\S+)$/m.exec(config)?.[1];
  assert.equal(check, '/readyz');
  // Its server timeout outlasts frost's request timeout, so frost's own 504 reaches the client.
  const serverTimeout = Number(/^\s*timeout server (\d+)s$/m.exec(config)?.[1]);
  const flags = serveFlags(['serve', '--models', 'any']);
  assert.ok(serverTimeout * 1000 > (flags.timeoutMs as number), `${serverTimeout} s`);
});
