/**
 * frost's safetensors reader and writer (core/safetensors/): files written by PyTorch from the format's
 * definition (F32, F16, BF16; an independent writer) read back to the values torch holds, frost's own files
 * round-trip, and hostile files are refused with one line naming the file and the tensor, before any tensor
 * is decoded: a truncated file, a header that claims more bytes than the file, a 2 GB header length, an
 * unknown dtype, a shape its range cannot hold, overlapping or gapped ranges, bytes that belong to no tensor.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { MAX_HEADER_BYTES, SafetensorsError, serialiseSafetensors } from '../core/safetensors/format.ts';
import { readSafetensors } from '../core/safetensors/node-file.ts';
import { findTorchPython } from './helpers/torch-python.ts';

let dir: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'frost-safetensors-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A file from a header object and data bytes, with the 8-byte length as the format writes it. */
function rawFile(header: unknown, data: Uint8Array, claimedLength?: bigint): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setBigUint64(0, claimedLength ?? BigInt(json.length), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

async function refused(name: string, bytes: Uint8Array, pattern: RegExp): Promise<void> {
  const path = join(dir, name);
  await writeFile(path, bytes);
  await assert.rejects(readSafetensors(path), (err: Error) => {
    assert.ok(err instanceof SafetensorsError, String(err));
    assert.ok(err.message.startsWith(`${path}: `), err.message);
    assert.doesNotMatch(err.message, /\n/, 'one line');
    assert.match(err.message, pattern);
    return true;
  });
}

describe('files PyTorch writes', () => {
  test('F32, F16 and BF16 tensors read back to the values torch holds, with the metadata', async () => {
    const python = findTorchPython();
    const path = join(dir, 'torch.safetensors');
    // The format from its definition, written by torch (torch 1.13 has no safetensors package): tensors in
    // name order, each one's bytes as torch stores them little-endian, the expected float32 values beside.
    const script = String.raw`
import json, struct, sys, torch
torch.manual_seed(3)
tensors = {
  "decoder.w": torch.randn(3, 5, dtype=torch.float32),
  "encoder.h": (torch.randn(7) * 100).to(torch.float16),
  "encoder.b": (torch.randn(2, 2, 2) * 1e-3).to(torch.bfloat16),
  "empty": torch.zeros(0, 4),
}
header, data, expected = {"__metadata__": {"format": "pt"}}, b"", {}
for name in sorted(tensors):
    t = tensors[name].contiguous()
    raw = t.view(torch.int16).numpy().tobytes() if t.dtype == torch.bfloat16 else t.numpy().tobytes()
    dtype = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}[t.dtype]
    header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [len(data), len(data) + len(raw)]}
    data += raw
    expected[name] = t.float().flatten().tolist()
h = json.dumps(header).encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + data)
print(json.dumps(expected))
`;
    const run = spawnSync(python, ['-c', script, path], { encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    const expected = JSON.parse(run.stdout) as Record<string, number[]>;
    const file = await readSafetensors(path);
    assert.deepEqual(file.metadata, { format: 'pt' });
    assert.deepEqual([...file.entries.keys()].sort(), Object.keys(expected).sort());
    assert.deepEqual(file.tensor('encoder.b').shape, [2, 2, 2]);
    assert.deepEqual(file.tensor('empty').shape, [0, 4]);
    for (const [name, values] of Object.entries(expected))
      assert.deepEqual([...file.tensor(name).data], values.map(Math.fround), name);
    assert.throws(() => file.tensor('decoder.v'), /torch\.safetensors: no tensor 'decoder\.v'/);
  });
});

describe("frost's writer", () => {
  test('round-trips float32 tensors and metadata, header padded to 8 bytes', async () => {
    const a = Float32Array.from({ length: 6 }, (_, i) => Math.fround(i / 7 - 0.3));
    const b = new Float32Array([Infinity, -0, 1e-40, -3.5]);
    const bytes = serialiseSafetensors({ 'z.a': { shape: [2, 3], data: a }, b: { shape: [4], data: b } }, { k: 'v' });
    const headerLength = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    assert.equal(headerLength % 8, 0);
    const path = join(dir, 'frost.safetensors');
    await writeFile(path, bytes);
    const file = await readSafetensors(path);
    assert.deepEqual(file.metadata, { k: 'v' });
    assert.deepEqual(file.tensor('z.a'), { shape: [2, 3], data: a });
    assert.ok(Object.is(file.tensor('b').data[1], -0));
    assert.deepEqual([...file.tensor('b').data], [...b]);
    // Name order, as the reference writer lays tensors out.
    assert.deepEqual(
      [...file.entries.values()].map((e) => [e.name, e.begin]),
      [
        ['b', 0],
        ['z.a', 16],
      ],
    );
    assert.throws(
      () => serialiseSafetensors({ x: { shape: [3], data: a } }),
      /tensor 'x': shape \[3\] does not hold 6/,
    );
  });
});

describe('hostile files are refused with one line naming the file and the tensor', () => {
  const f32 = (n: number) => new Uint8Array(4 * n);
  const ok = { w: { dtype: 'F32', shape: [2, 2], data_offsets: [0, 16] } };

  test('a file shorter than the 8-byte length', () => refused('short', new Uint8Array(5), /5 bytes: too short/));
  test('a truncated file: the last tensor ends past the data', async () => {
    const whole = rawFile(ok, f32(4));
    await refused('truncated', whole.subarray(0, whole.length - 3), /tensor 'w'.*ends past the file's 13 data bytes/);
  });
  test('a header that claims more bytes than the file', () =>
    refused('long-header', rawFile(ok, f32(4), 4096n), /header length 4096 claims more than the file's \d+ bytes/));
  test('a 2 GB header length, refused before anything is allocated', () =>
    refused(
      '2gb',
      rawFile(ok, f32(4), 2n ** 31n),
      new RegExp(`header length 2147483648 exceeds the ${MAX_HEADER_BYTES}`),
    ));
  test('a header length past 2^53', () =>
    refused('huge', rawFile(ok, f32(4), 2n ** 63n + 5n), /header length 9223372036854775813 exceeds/));
  test('an unknown dtype names the tensor and what frost reads', () =>
    refused(
      'int64',
      rawFile({ ...ok, step: { dtype: 'I64', shape: [], data_offsets: [16, 24] } }, f32(6)),
      /tensor 'step': dtype "I64" is not one frost reads \(F32, F16, BF16\)/,
    ));
  test('a shape its range cannot hold', () =>
    refused(
      'shape',
      rawFile({ w: { dtype: 'F32', shape: [2, 3], data_offsets: [0, 16] } }, f32(4)),
      /tensor 'w': F32 \[2, 3\] takes 24 bytes, its range \[0, 16\) holds 16/,
    ));
  test('overlapping ranges', () =>
    refused(
      'overlap',
      rawFile({ ...ok, v: { dtype: 'F32', shape: [2], data_offsets: [8, 16] } }, f32(4)),
      /tensor '(v|w)': its range starts at \d+, where the previous tensor still runs/,
    ));
  test('a gap between tensors', () =>
    refused(
      'gap',
      rawFile({ ...ok, v: { dtype: 'F32', shape: [1], data_offsets: [20, 24] } }, f32(6)),
      /tensor 'v': its range starts at 20, where a gap follows byte 16/,
    ));
  test('bytes after the last tensor', () =>
    refused('trailing', rawFile(ok, f32(5)), /4 bytes after the last tensor belong to no tensor/));
  test('a header that is not JSON, or not an object', async () => {
    const bad = new TextEncoder().encode('{"w": ');
    const bytes = new Uint8Array(8 + bad.length);
    new DataView(bytes.buffer).setBigUint64(0, BigInt(bad.length), true);
    bytes.set(bad, 8);
    await refused('not-json', bytes, /the header is not UTF-8 JSON/);
    await refused('array', rawFile([1, 2], new Uint8Array(0)), /the header is not a JSON object/);
  });
  test('negative or fractional sizes and offsets', async () => {
    await refused(
      'negative',
      rawFile({ w: { dtype: 'F32', shape: [-1, 4], data_offsets: [0, 16] } }, f32(4)),
      /tensor 'w': shape \[-1,4\] is not a list of sizes/,
    );
    await refused(
      'backwards',
      rawFile({ w: { dtype: 'F32', shape: [0], data_offsets: [16, 0] } }, f32(4)),
      /tensor 'w': data_offsets \[16,0\] is not a \[begin, end\] range/,
    );
  });
  test('metadata that is not strings', () =>
    refused('metadata', rawFile({ __metadata__: { n: 3 }, ...ok }, f32(4)), /__metadata__\.n is not a string/));
});
