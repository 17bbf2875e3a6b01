/**
 * Caption uploads under attack (issue #20, point 1), against the real `frost serve` in a child
 * process so its peak RSS can be read from /proc: 32 concurrent 25-megapixel PNGs (a few kB each,
 * but 100 MB each as RGBA) must neither blow the server's memory nor stall `/healthz`, and a PNG of
 * 1×24,000,000 pixels (cheap to send, seconds to decode) is refused from its header.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { crc32, deflateSync } from 'node:zlib';
import { type FrostServeProcess, startFrostServe } from './helpers/frost-serve.ts';
import { TOY_CAPTION_MODEL_NAME, toyCaptionModel } from './helpers/toy-caption-model.ts';

let root: string;
let server: FrostServeProcess;

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'frost-upload-budget-'));
  const toy = await toyCaptionModel();
  const dir = join(root, 'models', TOY_CAPTION_MODEL_NAME);
  await mkdir(dir, { recursive: true });
  for (const file of ['model-card.json', 'encoder.onnx', 'decoder.onnx'])
    await copyFile(join(toy.modelDir, file), join(dir, file));
  server = await startFrostServe(['--models', dir, '--port', '0', '--threads', '1', '--workers', '1']);
});

after(async () => {
  if (server?.child.exitCode === null) {
    const exited = new Promise((resolve) => server.child.once('exit', resolve));
    server.child.kill('SIGTERM');
    await exited;
  }
  if (root) await rm(root, { recursive: true, force: true });
});

/**
 * A valid 1-bit greyscale PNG with a striped pattern, written by hand: encoding 25 megapixels with
 * an image library would cost seconds, and deflate shrinks it to kilobytes.
 */
function bigPng(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer): Buffer => {
    const typed = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const out = Buffer.alloc(4 + typed.length + 4);
    out.writeUInt32BE(data.length, 0);
    typed.copy(out, 4);
    out.writeUInt32BE(crc32(typed), 4 + typed.length);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 1; // bit depth 1; colour type 0 (greyscale), no interlace
  const stride = 1 + Math.ceil(width / 8);
  const rows = Buffer.alloc(height * stride);
  for (let y = 0; y < height; y++) if ((y >> 6) % 2 === 0) rows.fill(0xf0, y * stride + 1, (y + 1) * stride);
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([
    signature,
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(rows, { level: 9 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

function upload(bytes: Buffer, name: string): Promise<Response> {
  const body = new FormData();
  body.append('image', new Blob([new Uint8Array(bytes)]), name);
  return fetch(`${server.url}/v1/caption`, { method: 'POST', body });
}

/** The server's longest event-loop delay since the last scrape, in seconds (prom-client resets it per scrape). */
async function eventLoopLag(): Promise<{ p99: number; max: number }> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const read = (stat: string) => {
    const m = new RegExp(`^frost_nodejs_eventloop_lag_${stat}_seconds (\\S+)$`, 'm').exec(text);
    assert.ok(m, `frost_nodejs_eventloop_lag_${stat}_seconds in /metrics`);
    return Number(m[1]);
  };
  return { p99: read('p99'), max: read('max') };
}

/** Peak resident set size of a process, in bytes (Linux: VmHWM). */
function peakRss(pid: number): number {
  const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  assert.ok(kb, 'VmHWM in /proc/PID/status');
  return Number(kb[1]) * 1024;
}

/**
 * `/healthz` is timed from this process, which shares two cores with the server and, under `npm
 * test`, with another test file: a probe can wait 100+ ms for a core without the server's loop
 * being blocked, and so can the server's loop itself when other work holds both cores. So 99% of
 * the server's own event-loop delays (its /metrics) must stay under 100 ms for the whole flood and
 * the longest under a second, and 95% of probes must answer within 100 ms as seen from here and
 * every one within a second; before the upload budget, decoding stopped `/healthz` for seconds.
 */
test('32 concurrent 25-megapixel uploads: peak RSS under 1.5 GB, /healthz under 100 ms, only 200 and 503', async (t) => {
  const png = bigPng(5000, 5000);
  assert.ok(png.length < 200_000, `the PNG is small on the wire (${png.length} bytes)`);
  await eventLoopLag(); // a scrape resets the server's lag histogram: the next one covers the flood only
  const uploads = Array.from({ length: 32 }, (_, i) => upload(png, `big-${i}.png`));
  let done = false;
  const health: number[] = [];
  const probe = (async () => {
    while (!done) {
      const t0 = performance.now();
      const res = await fetch(`${server.url}/healthz`);
      await res.arrayBuffer();
      health.push(performance.now() - t0);
      assert.equal(res.status, 200);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  })();
  const answers = await Promise.all(
    uploads.map(async (p) => {
      const res = await p;
      const body = (await res.json()) as { code?: string; caption?: string; image?: { width: number; height: number } };
      return { status: res.status, retryAfter: res.headers.get('retry-after'), body };
    }),
  );
  done = true;
  await probe;
  const lag = await eventLoopLag();

  const rss = peakRss(server.child.pid!);
  const statuses = answers.map((a) => a.status);
  assert.ok(rss < 1.5 * 1024 ** 3, `peak RSS ${(rss / 1024 ** 2).toFixed(0)} MB`);
  assert.ok(
    statuses.every((s) => s === 200 || s === 503),
    `statuses: ${statuses.join(',')}`,
  );
  assert.ok(statuses.includes(200), 'some uploads are captioned');
  for (const a of answers) {
    if (a.status === 503) assert.equal(a.retryAfter, '1', JSON.stringify(a.body));
    else
      assert.deepEqual(a.body.image, { width: 5000, height: 5000, format: 'png' }, "the size reported is the upload's");
  }
  health.sort((a, b) => a - b);
  assert.ok(health.length > 0);
  const count = (s: number) => statuses.filter((x) => x === s).length;
  const mb = (rss / 1024 ** 2).toFixed(0);
  t.diagnostic(
    `peak RSS ${mb} MB; ${count(200)}×200, ${count(503)}×503; /healthz max ${health.at(-1)!.toFixed(1)} ms, ${health.length} probes; server event-loop lag p99 ${(lag.p99 * 1000).toFixed(1)} ms, max ${(lag.max * 1000).toFixed(1)} ms`,
  );
  const p95 = health[Math.min(health.length - 1, Math.floor(health.length * 0.95))]!;
  const shown = `p95 ${p95.toFixed(0)} ms, max ${health.at(-1)!.toFixed(0)} ms`;
  // Decoding never stalls the server's own loop: a blocking decode would hold it for seconds, or for 100+ ms per image.
  const lagShown = `server event-loop lag p99 ${(lag.p99 * 1000).toFixed(0)} ms, max ${(lag.max * 1000).toFixed(0)} ms`;
  assert.ok(lag.p99 < 0.1, lagShown);
  assert.ok(lag.max < 1, lagShown);
  assert.ok(p95 < 100, `/healthz: ${shown}`);
  assert.ok(health.at(-1)! < 1000, `/healthz: ${shown}`);
});

test('an image with a side past the limit is refused from its header, without decoding', async () => {
  const thin = bigPng(1, 24_000_000);
  const t0 = performance.now();
  const res = await upload(thin, 'thin.png');
  const body = (await res.json()) as { code: string; message: string };
  assert.equal(res.status, 413, JSON.stringify(body));
  assert.equal(body.code, 'FROST_ERR_IMAGE_TOO_LARGE');
  assert.match(body.message, /thin\.png: .*24000000/);
  assert.ok(performance.now() - t0 < 2000, 'refused without decoding 24 million rows');
  assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
});
