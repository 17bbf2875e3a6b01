/**
 * The web client's server side, without a browser: the page and ORT routes with their isolation
 * headers, the model-file route and its refusals, the bundle's contents, and the static build.
 */
import assert from 'node:assert/strict';
import { readFile, readdir, writeFile, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { bundleWebApp, type WebBundle } from '../clients/web/build/bundle.ts';
import { ORT_RUNTIME_FILES, ortDistDir } from '../clients/web/build/ort-files.ts';
import { writeStaticSite } from '../clients/web/build/static-site.ts';
import { startServer, type RunningServer } from '../serve/server.ts';
import { writeTinyModelDir } from './helpers/tiny-model.ts';
import { webClient } from '../clients/web/build/web-client.ts';

let root: string;
let modelDir: string;
let server: RunningServer;

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'frost-web-serve-'));
  modelDir = await writeTinyModelDir(join(root, 'models', 'tiny'));
  // A file in the model directory that the card does not name: it must never be served.
  await writeFile(join(modelDir, 'notes.txt'), 'private');
  await writeFile(join(root, 'models', 'outside.txt'), 'outside');
  server = await startServer({
    modelsDir: join(root, 'models'),
    port: 0,
    intraOpNumThreads: 1,
    web: webClient(),
    log: () => {},
  });
});

after(async () => {
  await server?.close();
  await rm(root, { recursive: true, force: true });
});

const get = (path: string) => fetch(`${server.url}${path}`);

function assertIsolated(res: Response, what: string): void {
  assert.equal(res.headers.get('cross-origin-opener-policy'), 'same-origin', `${what}: COOP`);
  assert.equal(res.headers.get('cross-origin-embedder-policy'), 'require-corp', `${what}: COEP`);
}

async function assertJson404(path: string, code = 'FROST_ERR_NOT_FOUND'): Promise<void> {
  const res = await get(path);
  assert.equal(res.status, 404, path);
  assert.match(res.headers.get('content-type') ?? '', /application\/json/, path);
  assert.equal((await res.json()).code, code, path);
}

describe('the page', () => {
  test('GET / is the page, cross-origin isolated', async () => {
    const res = await get('/');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/html/);
    assertIsolated(res, 'GET /');
    const html = await res.text();
    assert.match(html, /<script type="module" src="app\/main\.js">/);
    assert.equal(await (await get('/index.html')).text(), html);
  });

  test('its script and style are served, isolated; unknown files get the JSON 404', async () => {
    for (const path of ['/app/main.js', '/app/style.css']) {
      const res = await get(path);
      assert.equal(res.status, 200, path);
      assertIsolated(res, path);
      assert.match(res.headers.get('content-type') ?? '', path.endsWith('.js') ? /text\/javascript/ : /text\/css/);
    }
    await assertJson404('/app/nothing.js');
    await assertJson404('/v2/nothing');
  });

  test('ONNX Runtime files come from the installed onnxruntime-web, and only the ones the page loads', async () => {
    const wasm = await get('/ort/ort-wasm-simd-threaded.wasm');
    assert.equal(wasm.status, 200);
    assert.equal(wasm.headers.get('content-type'), 'application/wasm');
    assertIsolated(wasm, 'wasm');
    const bytes = new Uint8Array(await wasm.arrayBuffer());
    assert.equal(bytes.length, (await stat(join(ortDistDir(), 'ort-wasm-simd-threaded.wasm'))).size);
    const glue = await get('/ort/ort-wasm-simd-threaded.asyncify.mjs');
    assert.equal(glue.status, 200);
    assert.match(glue.headers.get('content-type') ?? '', /text\/javascript/);
    await glue.arrayBuffer();
    await assertJson404('/ort/ort.node.min.mjs');
    await assertJson404('/ort/..%2Fpackage.json');
  });
});

describe('GET /v1/models/:name/files/:file', () => {
  test('serves the card and both graphs, byte for byte', async () => {
    for (const file of ['model-card.json', 'encoder.onnx', 'decoder.onnx']) {
      const res = await get(`/v1/models/tiny-en-de/files/${file}`);
      assert.equal(res.status, 200, file);
      assert.deepEqual(
        new Uint8Array(await res.arrayBuffer()),
        new Uint8Array(await readFile(join(modelDir, file))),
        file,
      );
    }
  });

  test('unknown model → 404 naming the loaded ones', async () => {
    await assertJson404('/v1/models/nope/files/model-card.json', 'FROST_ERR_UNKNOWN_MODEL');
  });

  test('refuses files the card does not name, and path traversal', async () => {
    for (const file of [
      'notes.txt',
      '..%2Foutside.txt',
      '..%2F..%2F..%2Fetc%2Fpasswd',
      '%2E%2E%2Fmodel-card.json',
      '.',
      '..',
      '%2Fetc%2Fpasswd',
    ]) {
      await assertJson404(`/v1/models/tiny-en-de/files/${file}`);
    }
    // A path with more segments does not match the route at all.
    await assertJson404('/v1/models/tiny-en-de/files/../../../etc/passwd');
    await assertJson404('/v1/models/tiny-en-de/files/sub/encoder.onnx');
  });
});

describe('the bundle', () => {
  let bundle: WebBundle;
  before(async () => {
    bundle = await bundleWebApp();
  });

  test('runs the shared runtime, tokeniser, vocabulary and beam search', () => {
    for (const file of [
      'core/runtime/seq2seq.ts',
      'core/runtime/model-card.ts',
      'core/text/tokenize.ts',
      'core/vocab.ts',
      'core/decode/beam-search.ts',
    ]) {
      assert.ok(bundle.inputs.includes(file), `${file} is bundled`);
    }
  });

  test('pulls in no Node module and no onnxruntime-node', async () => {
    // A package may say in its own `browser` field that a Node module is not needed in the browser
    // (protobufjs: `{ "fs": false }`, used only by its file loader); esbuild lists those as `(disabled):NAME`.
    const stubbedByPackages = await browserStubs(bundle.inputs);
    const ours = bundle.inputs.filter(
      (i) => !i.startsWith('node_modules/') && !stubbedByPackages.has(i.replace(/^\(disabled\):/, '')),
    );
    assert.deepEqual(
      bundle.inputs.filter((i) => /onnxruntime-node|^node:/.test(i)),
      [],
    );
    for (const i of ours) assert.match(i, /^(clients\/web\/src|core)\//, `${i}: only the client and core are bundled`);
    for (const [path, asset] of bundle.files) {
      if (path.endsWith('.js'))
        assert.ok(!Buffer.from(asset.contents).includes('onnxruntime-node'), `${path} mentions onnxruntime-node`);
    }
  });
});

test('a Node import in client code fails the build, naming the module', async () => {
  const entry = join(root, 'bad-entry.ts');
  await writeFile(entry, "import { readFileSync } from 'node:fs';\nconsole.log(readFileSync);\n");
  await assert.rejects(bundleWebApp({ entry }), /'node:fs' is a Node module and cannot be part of the web client/);
  await writeFile(entry, "import * as ort from 'onnxruntime-node';\nconsole.log(ort);\n");
  await assert.rejects(bundleWebApp({ entry }), /'onnxruntime-node' is a Node module/);
});

test('npm run build:web writes a static site', async () => {
  const out = join(root, 'web');
  const site = await writeStaticSite(out);
  for (const file of [
    'index.html',
    'app/main.js',
    'app/style.css',
    '_headers',
    ...ORT_RUNTIME_FILES.map((f) => `ort/${f}`),
  ]) {
    assert.ok(site.files.includes(file), `${file} is written`);
  }
  assert.deepEqual((await readdir(join(out, 'ort'))).sort(), [...ORT_RUNTIME_FILES].sort());
  assert.match(await readFile(join(out, '_headers'), 'utf8'), /Cross-Origin-Embedder-Policy: require-corp/);
});

/** Module names that the bundled packages map to `false` in their package.json `browser` field. */
async function browserStubs(inputs: readonly string[]): Promise<Set<string>> {
  const roots = new Set<string>();
  for (const i of inputs) {
    const m = /^((?:.*\/)?node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(i);
    if (m) roots.add(m[1]);
  }
  const stubs = new Set<string>();
  for (const root of roots) {
    const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { browser?: unknown };
    if (pkg.browser && typeof pkg.browser === 'object') {
      for (const [name, target] of Object.entries(pkg.browser)) if (target === false) stubs.add(name);
    }
  }
  return stubs;
}
