/**
 * A fleet behind a real load balancer (issue #51): deploy/haproxy/haproxy.cfg, as shipped but for its addresses, in
 * front of three `frost serve` replicas on loopback, under a steady load of translation requests through HAProxy:
 *   1. one replica killed with SIGKILL: only requests in flight on it may fail (counted and printed), every request
 *      after its mark-down succeeds, and HAProxy marks it down within its health checks (time printed);
 *   2. every replica restarted in turn (SIGTERM, drain, a new model version): no request fails, every answer names
 *      the version that produced it (`X-Model-Version`), and once done only the new version answers;
 *   3. a replica whose only model folder is bad never becomes ready and never takes traffic.
 * The replicas are `frost` child processes: their signals and exits are what is tested. Skips, saying why, where
 * haproxy is not installed (.ci/run installs it).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { MODEL_CARD_FILE, parseModelCard } from '../core/runtime/model-card.ts';
import { modelVersion } from '../serve/model-version.ts';
import { FROST_BIN } from './helpers/frost-cli.ts';
import { writeTinyModelDir } from './helpers/tiny-model.ts';

const CONFIG = join(import.meta.dirname, '..', 'deploy', 'haproxy', 'haproxy.cfg');
const REPLICAS = 3;
/** Clients sending requests through HAProxy, each a few milliseconds after its last answer. */
const CLIENTS = 3;
const PAUSE_MS = 10;

/** Debian's haproxy, on the PATH or where the package puts it (/usr/sbin is not on every user's PATH). */
const HAPROXY = ['haproxy', '/usr/sbin/haproxy'].find((bin) => {
  try {
    execFileSync(bin, ['-v'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
});
const haproxyMissing = HAPROXY ? undefined : 'haproxy is not installed (apt-get install haproxy; .ci/run does)';

let root: string;
/** The models folders of the two versions, and the bad one. */
let v1: string;
let v2: string;
let bad: string;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise((done) => server.close(done));
  return port;
}

/** A `frost serve` replica on `port`; `ready` resolves once its /readyz answers 200, rejects if it exits first. */
function startReplica(
  models: string,
  port: number,
): { child: ChildProcess; ready: Promise<void>; stderr: () => string } {
  const args = ['serve', '--models', models, '--port', String(port), '--workers', '1', '--threads', '1'];
  const child = spawn(process.execPath, [FROST_BIN, ...args, '--drain-timeout-ms', '10000'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<never>((_, reject) =>
    child.on('exit', (code, signal) => reject(new Error(`replica exited (${code ?? signal}):\n${stderr}`))),
  );
  const ready = (async () => {
    // Polls until ready, or until the replica has exited (then `exited` has already said why).
    for (let i = 0; i < 600 && child.exitCode === null && child.signalCode === null; i++) {
      const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) return;
      await sleep(100);
    }
    throw new Error(`replica on ${port} not ready after 60 s:\n${stderr}`);
  })();
  return { child, ready: Promise.race([ready, exited]), stderr: () => stderr };
}

/** HAProxy with the shipped config, its addresses replaced; `servers` are the replicas' ports. */
class Balancer {
  readonly socket: string;
  private child?: ChildProcess;

  constructor(
    readonly port: number,
    private readonly servers: number[],
  ) {
    this.socket = join(root, 'haproxy.sock');
  }

  async start(): Promise<void> {
    const shipped = await readFile(CONFIG, 'utf8');
    const lines = shipped.split('\n').filter((l) => !/^\s*server /.test(l));
    const config = lines
      .join('\n')
      .replace(/^(\s*)stats socket \S+/m, `$1stats socket ${this.socket}`)
      .replace(/^(\s*)bind :8080$/m, `$1bind 127.0.0.1:${this.port}`)
      .concat(this.servers.map((p, i) => `  server frost${i + 1} 127.0.0.1:${p}\n`).join(''));
    assert.notEqual(config, shipped);
    const path = join(root, 'haproxy.cfg');
    await writeFile(path, config);
    const child = spawn(HAPROXY!, ['-db', '-f', path], { stdio: ['ignore', 'ignore', 'pipe'] });
    this.child = child;
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    for (let i = 0; i < 200 && !(await this.states().catch(() => undefined)); i++) {
      if (child.exitCode !== null) assert.fail(`haproxy exited (${child.exitCode}):\n${stderr}`);
      await sleep(50);
    }
  }

  /** Each server's state as HAProxy sees it (`UP`, `DOWN`, ...), by name. */
  async states(): Promise<Record<string, string>> {
    return Object.fromEntries(Object.entries(await this.stats()).map(([name, s]) => [name, s.status]));
  }

  /** Each server's status and the 2xx answers it gave through HAProxy, by name (`show stat`). */
  async stats(): Promise<Record<string, { status: string; answered: number }>> {
    const csv = await new Promise<string>((resolve, reject) => {
      const conn = createConnection(this.socket);
      let text = '';
      conn.on('data', (d) => (text += d.toString()));
      conn.on('end', () => resolve(text));
      conn.on('error', reject);
      conn.write('show stat\n');
    });
    const [header, ...rows] = csv.trim().split('\n');
    const cols = header!.replace(/^# /, '').split(',');
    const at = (name: string) => cols.indexOf(name);
    const stats: Record<string, { status: string; answered: number }> = {};
    for (const row of rows) {
      const f = row.split(',');
      if (f[at('pxname')] === 'frost' && /^frost\d+$/.test(f[at('svname')]!))
        stats[f[at('svname')]!] = { status: f[at('status')]!, answered: Number(f[at('hrsp_2xx')] || 0) };
    }
    return stats;
  }

  /** Waits until server `name` is in `state`; returns how long that took. */
  async until(name: string, state: RegExp, timeoutMs = 20_000): Promise<number> {
    const started = performance.now();
    while (!state.test((await this.states())[name] ?? '')) {
      if (performance.now() - started > timeoutMs) assert.fail(`${name} not ${state} after ${timeoutMs} ms`);
      await sleep(20);
    }
    return performance.now() - started;
  }

  stop(): void {
    this.child?.kill('SIGKILL');
  }
}

/** One request's outcome: when it was sent and answered, its status (0: no answer), the version that answered. */
interface Outcome {
  sent: number;
  done: number;
  status: number;
  version: string | null;
}

/** Clients sending translation requests through the balancer until stopped. */
class Load {
  readonly outcomes: Outcome[] = [];
  private running = true;
  private readonly loops: Promise<void>[];

  constructor(url: string) {
    this.loops = Array.from({ length: CLIENTS }, async () => {
      while (this.running) {
        const sent = performance.now();
        const res = await fetch(`${url}/v1/translate`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ text: 'a man rides a horse .', beam: 2 }),
        }).catch(() => undefined);
        if (res) await res.arrayBuffer().catch(() => undefined);
        const version = res?.headers.get('x-model-version') ?? null;
        this.outcomes.push({ sent, done: performance.now(), status: res?.status ?? 0, version });
        await sleep(PAUSE_MS);
      }
    });
  }

  async stop(): Promise<Outcome[]> {
    this.running = false;
    await Promise.all(this.loops);
    return this.outcomes;
  }
}

const failed = (o: readonly Outcome[]) => o.filter((r) => r.status !== 200);

/** The version a replica serving the model in `models` names in `X-Model-Version`: its card's, as served. */
async function versionOf(models: string): Promise<string> {
  const path = join(models, 'tiny', MODEL_CARD_FILE);
  return modelVersion(parseModelCard(await readFile(path, 'utf8'), path));
}

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'frost-fleet-'));
  v1 = join(root, 'v1');
  v2 = join(root, 'v2');
  bad = join(root, 'bad');
  await writeTinyModelDir(join(v1, 'tiny'));
  // The next version: the same model exported again (another card, so another version).
  const next = await writeTinyModelDir(join(v2, 'tiny'));
  const card = JSON.parse(await readFile(join(next, MODEL_CARD_FILE), 'utf8')) as { created: string };
  card.created = new Date(Date.parse(card.created) + 60_000).toISOString();
  await writeFile(join(next, MODEL_CARD_FILE), JSON.stringify(card, null, 1));
  const broken = await writeTinyModelDir(join(bad, 'tiny'));
  await writeFile(join(broken, 'decoder.onnx'), 'not a graph');
});

after(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('three replicas behind HAProxy', { skip: haproxyMissing, timeout: 240_000 }, () => {
  const replicas: Array<ReturnType<typeof startReplica>> = [];
  let ports: number[];
  let balancer: Balancer;
  let url: string;
  /** A fourth replica, in HAProxy's list like the others, whose only model folder is bad. */
  let badReplica: ReturnType<typeof startReplica>;

  before(async () => {
    ports = await Promise.all(Array.from({ length: REPLICAS + 1 }, freePort));
    for (const port of ports.slice(0, REPLICAS)) replicas.push(startReplica(v1, port));
    badReplica = startReplica(bad, ports[REPLICAS]!);
    badReplica.ready.catch(() => undefined);
    await Promise.all(replicas.map((r) => r.ready));
    balancer = new Balancer(await freePort(), ports);
    await balancer.start();
    url = `http://127.0.0.1:${balancer.port}`;
    for (let i = 1; i <= REPLICAS; i++) await balancer.until(`frost${i}`, /^UP/);
    await balancer.until(`frost${REPLICAS + 1}`, /^DOWN/);
  });

  after(() => {
    balancer?.stop();
    for (const r of [...replicas, badReplica]) r?.child.kill('SIGKILL');
  });

  test('a replica killed with SIGKILL: only its requests in flight may fail, and it is marked down', async () => {
    const load = new Load(url);
    await sleep(1500);
    const killedAt = performance.now();
    replicas[0]!.child.kill('SIGKILL');
    const markDownMs = await balancer.until('frost1', /^DOWN/);
    const downAt = performance.now();
    await sleep(1500);
    const outcomes = await load.stop();
    const inFlight = failed(outcomes).filter((o) => o.sent <= killedAt);
    const later = failed(outcomes).filter((o) => o.sent > killedAt);
    console.log(
      `fleet: kill -9 of one of ${REPLICAS} replicas under ${CLIENTS} clients: ${outcomes.length} requests, ` +
        `${inFlight.length} failed that were in flight, ${later.length} sent after the kill failed; ` +
        `marked down after ${markDownMs.toFixed(0)} ms`,
    );
    assert.deepEqual(later, [], 'a request sent after the kill failed');
    assert.ok(inFlight.length <= CLIENTS, `${inFlight.length} failed: more than were in flight`);
    assert.ok(outcomes.filter((o) => o.sent > downAt).length > 0, 'no request after the mark-down');
    // The health checks run every 500 ms and one failure marks a server down.
    assert.ok(markDownMs < 2000, `marked down after ${markDownMs} ms`);
  });

  test('a rolling update to a new model version loses no request, and each answer names its version', async () => {
    const [old, next] = [await versionOf(v1), await versionOf(v2)];
    assert.notEqual(old, next);
    const load = new Load(url);
    await sleep(1000);
    for (let i = 0; i < REPLICAS; i++) {
      const name = `frost${i + 1}`;
      const stopping = replicas[i]!;
      // The replica the first test killed is already down: it only starts again, with the new version.
      if (stopping.child.exitCode === null && stopping.child.signalCode === null) {
        const exited = new Promise((done) => stopping.child.on('exit', done));
        stopping.child.kill('SIGTERM');
        await balancer.until(name, /^DOWN/);
        await exited;
      }
      replicas[i] = startReplica(v2, ports[i]!);
      await replicas[i]!.ready;
      await balancer.until(name, /^UP/);
    }
    const updatedAt = performance.now();
    await sleep(1000);
    const outcomes = await load.stop();
    const versions = new Set(outcomes.map((o) => o.version));
    console.log(
      `fleet: rolling update of ${REPLICAS} replicas under ${CLIENTS} clients: ${outcomes.length} requests, ` +
        `${failed(outcomes).length} failed; versions answering: ${[...versions].join(', ')}`,
    );
    assert.deepEqual(failed(outcomes), []);
    assert.deepEqual([...versions].sort(), [old, next].sort());
    const after = outcomes.filter((o) => o.sent > updatedAt);
    assert.ok(after.length > 0);
    assert.ok(
      after.every((o) => o.version === next),
      'an answer after the update from the old version',
    );
  });

  test('a replica whose only model folder is bad never becomes ready and never takes traffic', async () => {
    await assert.rejects(badReplica.ready, /replica exited \(1\)/);
    assert.match(badReplica.stderr(), /decoder\.onnx/);
    // Through both tests' load, HAProxy held it DOWN and it answered nothing.
    const stats = (await balancer.stats())[`frost${REPLICAS + 1}`]!;
    assert.match(stats.status, /^DOWN/);
    assert.equal(stats.answered, 0);
  });
});
