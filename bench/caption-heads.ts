/**
 * The README's captioning results: show-tell and show-attend-tell, each with the `learned` and the
 * `fixed-uniform` output layer, trained on Flickr8k under the same time budget, exported to ONNX
 * (with the parity check) and scored on the test split with beam search through onnxruntime-node.
 * Writes results.json and results.md (the paper's Table 1 layout, plus three example images with
 * every model's caption) to --out, and prints the table.
 *
 *   npm run bench:caption -- --minutes 60
 *
 * The two heads of an architecture train side by side (one core each, so they share the machine's
 * noise); the architectures follow one another. Finished runs are reused: rerunning the command
 * only redoes what is missing (a run whose budget is used up stops at once on resume).
 */
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus } from 'node:os';
import { extname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-node';
import { evaluateCaptions } from '../core/metrics/caption-eval.ts';
import { loadCaptionModelDir } from '../core/runtime/load-node.ts';
import { captionWordCounts, imagesOf, loadCaptionDataset } from '../train/data/captions.ts';
import { loadImageCache, normaliseBatch } from '../train/data/image-cache.ts';
import { REPO_ROOT, resolveDataRoot } from '../train/data/paths.ts';
import { runConfigSchema, type CaptionRunConfig } from '../train/run-config.ts';
import { captionCacheDir } from '../train/tasks/caption.ts';
import { formatResults, type CaptionRow } from '../report/caption-results.ts';
import { runFrost } from '../report/experiments/spawn-frost.ts';

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '60' },
    archs: { type: 'string', default: 'show-tell,show-attend-tell' },
    heads: { type: 'string', default: 'learned,fixed-uniform' },
    preset: { type: 'string', default: 'small' },
    beam: { type: 'string', default: '10' },
    data: { type: 'string' },
    'val-images': { type: 'string', default: '500' },
    out: { type: 'string', default: 'runs/bench-caption-heads' },
    seed: { type: 'string', default: '1' },
  },
});

const archs = args.archs!.split(',');
const heads = args.heads!.split(',');
const minutes = Number(args.minutes);
const beam = Number(args.beam);
const outDir = resolve(args.out!);
const dataDir = resolve(args.data ?? join(resolveDataRoot() ?? join(REPO_ROOT, 'data'), 'flickr8k'));
if (!existsSync(dataDir))
  throw new Error(
    `Flickr8k not found at ${dataDir}; pass --data DIR (a Karpathy-style dataset_flickr8k.json with its images)`,
  );
const cores = availableParallelism();
const gemmThreads = Math.max(1, Math.floor(cores / heads.length));

async function lastMetrics(runDir: string): Promise<Record<string, number | boolean>> {
  const lines = (await readFile(join(runDir, 'metrics.jsonl'), 'utf8')).trim().split('\n');
  return JSON.parse(lines[lines.length - 1]) as Record<string, number | boolean>;
}

const started = Date.now();
await mkdir(outDir, { recursive: true });
const dataset = await loadCaptionDataset(dataDir);
// The image cache is built here once, before the side-by-side trainers would each build it.
const spec = (
  runConfigSchema.parse({
    task: 'caption',
    arch: archs[0],
    preset: args.preset,
    archConfig: {},
    head: { name: heads[0] },
    data: { dir: dataDir },
  }) as CaptionRunConfig
).image;
const cacheDir = captionCacheDir(dataset);
const cache = await loadImageCache(dataset, {
  cacheDir,
  spec,
  onProgress: (done, total) => done % 1000 === 0 && process.stderr.write(`decoding images: ${done}/${total}\n`),
});

const runName = (arch: string, head: string) => `${arch}-${head}`;
for (const arch of archs) {
  process.stderr.write(`training ${arch} with ${heads.join(', ')} side by side for ${minutes} min each\n`);
  await Promise.all(
    heads.map(async (head) => {
      const runDir = join(outDir, runName(arch, head));
      const common = ['--max-minutes', String(minutes), '--quiet'];
      const argv = existsSync(join(runDir, 'config.json'))
        ? ['train', '--resume', runDir, ...common]
        : [
            'train',
            '--task',
            'caption',
            '--arch',
            arch,
            '--head',
            head,
            '--data',
            dataDir,
            '--preset',
            args.preset!,
            '--seed',
            args.seed!,
            '--val-sentences',
            args['val-images']!,
            '--image-cache',
            cacheDir,
            '--out',
            runDir,
            ...common,
          ];
      const env = { FROST_WASM_THREADS: '1', FROST_NATIVE_GEMM_THREADS: String(gemmThreads) };
      await runFrost(argv, env, join(outDir, `${runName(arch, head)}.train.log`));
    }),
  );
}

const test = imagesOf(dataset, ['test']);
const refs = test.map((im) => im.captions);
const trainCounts = captionWordCounts(dataset);
const rows: CaptionRow[] = [];
const captionsByModel: Record<string, string[]> = {};
for (const arch of archs) {
  for (const head of heads) {
    const name = runName(arch, head);
    const runDir = join(outDir, name);
    const modelDir = join(outDir, 'artifacts', name);
    await runFrost(['export', runDir, '--out', modelDir, '--quiet'], {}, join(outDir, `${name}.export.log`));
    const runtime = await loadCaptionModelDir(modelDir, { intraOpNumThreads: cores });
    if (runtime.imageSpec.size !== spec.size)
      throw new Error(`${modelDir}: trained at ${runtime.imageSpec.size}², the cache holds ${spec.size}²`);
    const t0 = Date.now();
    const hyps: string[] = [];
    const plane = 3 * spec.size * spec.size;
    for (let i = 0; i < test.length; i += 50) {
      const chunk = test.slice(i, i + 50);
      const pixels = normaliseBatch(
        cache,
        chunk.map((im) => cache.indexOf(im.id)),
        spec,
      );
      const images = chunk.map((_, j) => pixels.subarray(j * plane, (j + 1) * plane));
      for (const c of await runtime.caption(images, { beam })) hyps.push(c.text);
    }
    const decodeSeconds = (Date.now() - t0) / 1000;
    await runtime.release();
    await writeFile(join(outDir, `${name}.test.hyp`), `${hyps.join('\n')}\n`);
    captionsByModel[name] = hyps;
    const scores = evaluateCaptions(hyps, refs, trainCounts);
    const metrics = await lastMetrics(runDir);
    const card = runtime.card;
    rows.push({
      arch,
      head,
      learnable: card.params.learnable,
      frozen: card.params.frozen,
      epochs: `${metrics.epoch}${metrics.complete ? '' : ' (partial)'}`,
      steps: Number(metrics.step),
      trainMinutes: Number(metrics.elapsedMinutes),
      valBleu4: card.metrics.valBleu,
      scores,
      decodeSeconds,
    });
  }
}

// Three test images spread over the split, the same for every model.
const examples = [0, Math.floor(test.length / 3), Math.floor((2 * test.length) / 3)].map((i) => test[i]);
await mkdir(join(outDir, 'examples'), { recursive: true });
const exampleRows = [];
for (const im of examples) {
  const file = `examples/${im.id}${extname(im.path)}`;
  await copyFile(im.path, join(outDir, file));
  const index = test.indexOf(im);
  exampleRows.push({
    file,
    reference: im.captions[0],
    captions: Object.fromEntries(Object.entries(captionsByModel).map(([m, c]) => [m, c[index]])),
  });
}

const machine = `${cpus()[0]?.model ?? 'cpu'} x${cores}, Node ${process.version}, onnxruntime-node ${ort.env.versions.node}`;
const command = `npm run bench:caption -- --minutes ${minutes}${args.archs !== 'show-tell,show-attend-tell' ? ` --archs ${args.archs}` : ''}${args.heads !== 'learned,fixed-uniform' ? ` --heads ${args.heads}` : ''}`;
const table = formatResults({
  rows,
  examples: exampleRows,
  machine,
  budget: `${minutes} min`,
  beam,
  preset: args.preset!,
  testImages: test.length,
  command,
  wallMinutes: (Date.now() - started) / 60000,
});
await writeFile(
  join(outDir, 'results.json'),
  `${JSON.stringify({ machine, args, rows, examples: exampleRows }, null, 2)}\n`,
);
await writeFile(join(outDir, 'results.md'), `${table}\n`);
process.stdout.write(`${table}\n`);
