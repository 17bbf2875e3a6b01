/**
 * The export's parity check on made-up inputs (issue #20, point 6): when the run's corpus cannot be
 * read at export time, the check runs on seeded random tokens, and the card and the log say so
 * rather than claiming a check on validation sentences.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { exportRun } from '../export/export-run.ts';
import { MAX_PARITY_TOLERANCE, PARITY_TOLERANCE } from '../export/parity.ts';
import { initBackend } from '../train/backend/select.ts';
import { trainToyRun } from './helpers/toy-run.ts';

let dir: string;
let runDir: string;
let dataDir: string;

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  dir = await mkdtemp(join(tmpdir(), 'frost-parity-inputs-'));
  const corpus = { seed: 4, train: 120, val: 8, test: 8 };
  ({ runDir, dataDir } = await trainToyRun(dir, { corpus, config: { epochs: 1, optim: { learningRate: 1e-3 } } }));
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface ParityRecord {
  inputs: string;
  tolerance: number;
  maxScaledDiff: number;
  sentences: number;
  syntheticBecause?: string;
}
const parityOf = async (out: string) =>
  (JSON.parse(await readFile(join(out, 'model-card.json'), 'utf8')) as { config: { parity: ParityRecord } }).config
    .parity;

test('with its corpus, the card says the parity check ran on validation sentences', async () => {
  const out = join(dir, 'with-data');
  await exportRun(runDir, out, { quiet: true });
  const parity = await parityOf(out);
  assert.equal(parity.inputs, 'validation');
  assert.equal(parity.syntheticBecause, undefined);
  assert.equal(parity.tolerance, PARITY_TOLERANCE);
  assert.ok(parity.maxScaledDiff <= parity.tolerance);
});

test('without it, the card records synthetic inputs and why, and the export says so', async () => {
  await rm(dataDir, { recursive: true, force: true });
  const out = join(dir, 'without-data');
  const written: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  const capture = (chunk: string | Uint8Array) => written.push(String(chunk)) > 0;
  process.stderr.write = capture as typeof process.stderr.write;
  try {
    await exportRun(runDir, out, { quiet: true });
  } finally {
    process.stderr.write = write;
  }
  const parity = await parityOf(out);
  assert.equal(parity.inputs, 'synthetic');
  assert.match(parity.syntheticBecause ?? '', /could not be read/);
  assert.match(written.join(''), /parity check runs on synthetic inputs/);
});

test('a caller-given parity bar is applied, recorded, and bounded', async () => {
  // Float32 kernels in two runtimes never agree to 1e-12 on a trained model: the bar decides the export.
  await assert.rejects(
    exportRun(runDir, join(dir, 'strict'), { quiet: true, parityTolerance: 1e-12 }),
    /export refused: onnxruntime.* \(tolerance 1e-12\); --parity-tolerance \d\.\de-\d+ or more exports it anyway/,
  );
  await assert.rejects(
    exportRun(runDir, join(dir, 'loose'), { quiet: true, parityTolerance: 10 * MAX_PARITY_TOLERANCE }),
    /parity tolerance must be in \(0, 0\.01\]/,
  );
  const out = join(dir, 'given');
  await exportRun(runDir, out, { quiet: true, parityTolerance: 5e-4 });
  assert.equal((await parityOf(out)).tolerance, 5e-4);
});
