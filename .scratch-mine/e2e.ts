import { join } from 'node:path';
import { readFile } from 'node:fs/promises';
import { corpusBleu } from '../core/metrics/bleu.ts';
import { loadModelDir } from '../core/runtime/load-node.ts';
import { exportRun } from '../export/export-run.ts';
import { formatInspect, inspectModel } from '../export/inspect.ts';
import { resolveArchConfig } from '../models/index.ts';
import { initBackend } from '../train/backend/select.ts';
import { writeToyCorpus } from '../train/data/fetch.ts';
import { runConfigSchema } from '../train/run-config.ts';
import { train } from '../train/trainer.ts';
import { existsSync } from 'node:fs';

await initBackend({ prefer: 'wasm', quiet: true });
const dir = '/tmp/frost-scratch/e2e';
const dataDir = join(dir, 'toy');
const runDir = join(dir, 'run');
let t0 = performance.now();
if (!existsSync(runDir)) {
  await writeToyCorpus(dataDir, { seed: 1, train: 6000, val: 200, test: 200, lexiconScale: 0.2 });
  const cfg = runConfigSchema.parse({
    arch: 'rnn-attn', preset: 'tiny', archConfig: resolveArchConfig('rnn-attn', 'tiny'), head: { name: process.argv[2] ?? 'learned' },
    data: { dir: dataDir, kind: 'plain', src: 'src', tgt: 'tgt' }, tokenizer: 'whitespace', vocab: { minFreq: 1 }, optim: { learningRate: 5e-3 }, epochs: 4,
  });
  const r = await train(cfg, runDir, { quiet: true });
  r.model.params.dispose();
  console.log('train s', ((performance.now() - t0) / 1000).toFixed(1));
}
const src = (await readFile(join(dataDir, 'test.src'), 'utf8')).trim().split('\n');
const ref = (await readFile(join(dataDir, 'test.tgt'), 'utf8')).trim().split('\n');
for (const p of ['fp32', 'fp16', 'int8'] as const) {
  t0 = performance.now();
  const out = join(dir, `model-${p}`);
  const res = await exportRun(runDir, out, { precision: p, triton: p === 'int8' ? join(dir, 'triton') : undefined });
  console.log(p, 'export s', ((performance.now() - t0) / 1000).toFixed(1), JSON.stringify(res.precisionCheck));
  const rt = await loadModelDir(out);
  const hyp = await rt.translate(src, { beam: 1 });
  await rt.release();
  console.log(p, 'test BLEU', corpusBleu(hyp.map((h) => h.text), [ref]).score.toFixed(2));
  console.log(formatInspect(await inspectModel(out)));
}
