import { existsSync } from 'node:fs';
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus } from 'node:os';
import { basename, dirname, extname, join, resolve } from 'node:path';
import * as ort from 'onnxruntime-node';
import { z } from 'zod';
import { evaluateCaptions } from '../../core/metrics/caption-eval.ts';
import { loadCaptionModelDir } from '../../core/runtime/load-node.ts';
import { getArch, headNames, resolveArchConfig } from '../../models/index.ts';
import { type CaptionDataset, captionWordCounts, imagesOf, loadCaptionDataset } from '../../train/data/captions.ts';
import { loadImageCache, normaliseBatch } from '../../train/data/image-cache.ts';
import { REPO_ROOT, resolveDataRoot } from '../../train/data/paths.ts';
import { makeToyCaptions } from '../../train/data/toy-captions.ts';
import { DEFAULT_IMAGE_SPEC, type ImageSpec } from '../../core/image/preprocess.ts';
import { readCheckpointInfo, RunFolder } from '../../train/run-folder.ts';
import { captionCacheDir } from '../../train/tasks/caption.ts';
import { cachedJson } from '../cache.ts';
import { type CaptionRow, formatResults } from '../caption-results.ts';
import { gridBudget } from './grid.ts';
import { type ExperimentOptions, registerExperiment } from './registry.ts';
import { budgetSuffix, checkBudget, describeBudget, trainSideBySide } from './side-by-side.ts';
import { runFrost } from './spawn-frost.ts';

const DEFAULTS = {
  arch: 'show-tell,show-attend-tell',
  heads: ['learned', 'fixed-uniform'],
  preset: 'small',
  out: 'runs/experiments/caption-heads',
};
/** The paper's Table 1 decodes with beam search; bench/caption-heads.ts used 10. */
const DEFAULT_BEAM = 10;
/** The toy set of `--data toy`: coloured shapes, enough for a tiny captioner to learn in seconds. */
const TOY_CAPTIONS = { count: 200, size: 64 } as const;

/** `--data flickr8k|toy|DIR`: the caption data set's folder (the toy one written under `out`). */
async function captionDataDir(data: string, out: string): Promise<string> {
  if (data === 'toy') {
    const dir = join(out, 'data', 'toy');
    if (!existsSync(join(dir, 'dataset.json')) && !existsSync(join(dir, 'dataset_toy.json')))
      await makeToyCaptions(dir, TOY_CAPTIONS);
    return dir;
  }
  const dir = data === 'flickr8k' ? join(resolveDataRoot() ?? join(REPO_ROOT, 'data'), 'flickr8k') : resolve(data);
  if (!existsSync(dir))
    throw new Error(`caption data not found at ${dir}; pass --data flickr8k, toy, or a data set folder`);
  return dir;
}

/** What a finished model's test captions and scores are computed from; cached per checkpoint and beam. */
const evalSchema = z.object({
  learnable: z.number(),
  frozen: z.number(),
  valBleu4: z.number().optional(),
  captions: z.array(z.string()),
  decodeSeconds: z.number(),
});

/** The image spec the runs train with: `--image-size N` among the train flags, else the default (as `frost train`). */
function imageSpec(trainFlags: string[]): ImageSpec {
  const at = trainFlags.indexOf('--image-size');
  return at >= 0 ? { ...DEFAULT_IMAGE_SPEC, size: Number(trainFlags[at + 1]) } : DEFAULT_IMAGE_SPEC;
}

/** Exports a finished run (once per checkpoint) and captions the test images with beam search. */
async function evaluateRun(
  runDir: string,
  modelDir: string,
  test: CaptionDataset['images'],
  cache: Awaited<ReturnType<typeof loadImageCache>>,
  beam: number,
): Promise<z.infer<typeof evalSchema>> {
  const best = (await readCheckpointInfo(runDir, 'best')) ?? (await readCheckpointInfo(runDir, 'last'));
  if (!best) throw new Error(`${runDir} has no checkpoint to evaluate`);
  const key = { checkpoint: best.sha256, beam, images: test.length, first: test[0]?.id ?? '' };
  return cachedJson(join(runDir, 'eval', `caption-test-beam${beam}.json`), key, evalSchema, async () => {
    await runFrost(
      ['export', runDir, '--out', modelDir, '--quiet'],
      {},
      join(dirname(modelDir), `${basename(modelDir)}.export.log`),
    );
    const runtime = await loadCaptionModelDir(modelDir, { intraOpNumThreads: availableParallelism() });
    try {
      const spec = runtime.imageSpec;
      if (spec.size !== cache.size)
        throw new Error(`${modelDir}: trained at ${spec.size}², the image cache holds ${cache.size}²`);
      const t0 = Date.now();
      const captions: string[] = [];
      const plane = 3 * spec.size * spec.size;
      for (let i = 0; i < test.length; i += 50) {
        const chunk = test.slice(i, i + 50);
        const pixels = normaliseBatch(
          cache,
          chunk.map((im) => cache.indexOf(im.id)),
          spec,
        );
        const images = chunk.map((_, j) => pixels.subarray(j * plane, (j + 1) * plane));
        for (const c of await runtime.caption(images, { beam })) captions.push(c.text);
      }
      const card = runtime.card;
      return {
        learnable: card.params.learnable,
        frozen: card.params.frozen,
        ...(card.metrics.valBleu === undefined ? {} : { valBleu4: card.metrics.valBleu }),
        captions,
        decodeSeconds: (Date.now() - t0) / 1000,
      };
    } finally {
      await runtime.release();
    }
  });
}

/**
 * The paper's captioning experiment (its Table 1): `show-tell` and `show-attend-tell`, each with the
 * `learned` and the `fixed-uniform` output layer, trained side by side under one budget (an epoch cap,
 * the stopping rule, or minutes), resumable like mt-heads; then exported, the test images captioned with
 * beam search, and scored (coco-caption BLEU, ROUGE-L, CIDEr-D, vocabulary usage and the rare-word share,
 * both without `<unk>`), with three example images and every model's caption.
 */
registerExperiment({
  name: 'caption-heads',
  summary:
    "train show-tell and show-attend-tell with learned and fixed output layers, score test captions (the paper's Table 1)",
  defaults: DEFAULTS,
  async run(options: ExperimentOptions) {
    const started = Date.now();
    const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
    if (options.pairs !== undefined) throw new Error('caption-heads has no language pairs: drop --pairs');
    if (options.reportOnly === true)
      throw new Error('--report-only is for mt-heads: caption-heads reports when every run has finished');
    const budget = gridBudget(options);
    checkBudget(budget);
    const archs = (options.arch ?? DEFAULTS.arch)
      .split(',')
      .map((a) => a.trim())
      .filter((a) => a !== '');
    const preset = options.preset ?? DEFAULTS.preset;
    for (const arch of archs) {
      resolveArchConfig(arch, preset);
      if (getArch(arch).inputKind !== 'image') throw new Error(`'${arch}' is not a captioning architecture`);
    }
    if (options.jobs !== undefined)
      throw new RangeError('caption-heads trains the heads of each architecture side by side; --jobs is for mt-heads');
    const heads = options.heads ?? DEFAULTS.heads;
    const unknown = heads.filter((h) => !headNames().includes(h));
    if (heads.length === 0 || unknown.length > 0)
      throw new RangeError(
        `caption-heads needs known heads; unknown: ${unknown.join(', ')} (known: ${headNames().join(', ')})`,
      );
    const out = resolve(
      options.out ??
        `${DEFAULTS.out}${budgetSuffix(options)}${options.data === 'flickr8k' ? '' : `-${basename(options.data)}`}`,
    );
    const dataDir = await captionDataDir(options.data, out);
    const dataset = await loadCaptionDataset(dataDir);
    const trainFlags = options.trainFlags ?? [];
    // The image cache is built here once, before the side-by-side trainers would each build it.
    const spec = imageSpec(trainFlags);
    const cacheDir = captionCacheDir(dataset);
    const cache = await loadImageCache(dataset, { cacheDir, spec });
    const seed = options.seed ?? 1;
    const gemmThreads = Math.max(1, Math.floor(availableParallelism() / heads.length));
    const runDir = (arch: string, head: string) => join(out, `${arch}-${head}`);
    for (const arch of archs) {
      await trainSideBySide(
        heads.map((head) => ({
          dir: runDir(arch, head),
          name: `${arch}-${head}`,
          newRunArgv: [
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
            preset,
            '--seed',
            String(seed),
            '--image-cache',
            cacheDir,
            '--out',
            runDir(arch, head),
            ...trainFlags,
          ],
        })),
        {
          budget,
          label: `${arch} with ${heads.join(', ')}`,
          logsDir: join(out, 'logs'),
          env: { FROST_WASM_THREADS: '1', FROST_NATIVE_GEMM_THREADS: String(gemmThreads) },
          check: async (run) => {
            const { config } = await RunFolder.open(run.dir);
            const head = heads.find((h) => run.dir === runDir(arch, h));
            if (config.task !== 'caption' || config.arch !== arch || config.head.name !== head || config.seed !== seed)
              throw new Error(
                `${run.dir} holds another run (${config.task} ${config.arch} ${config.head.name}, seed ${config.seed}): move it away or choose another --out`,
              );
          },
          log,
        },
      );
    }

    const beam = options.beam ?? DEFAULT_BEAM;
    const test = imagesOf(dataset, ['test']);
    const refs = test.map((im) => im.captions);
    const trainCounts = captionWordCounts(dataset);
    const rows: CaptionRow[] = [];
    const captionsByModel: Record<string, string[]> = {};
    for (const arch of archs)
      for (const head of heads) {
        const name = `${arch}-${head}`;
        log(`${name}: test captions, beam ${beam}`);
        const ev = await evaluateRun(runDir(arch, head), join(out, 'artifacts', name), test, cache, beam);
        captionsByModel[name] = ev.captions;
        const last = (await readCheckpointInfo(runDir(arch, head), 'last'))!;
        rows.push({
          arch,
          head,
          learnable: ev.learnable,
          frozen: ev.frozen,
          epochs: `${last.epoch} (${String(last.state.stopReason ?? 'unfinished')})`,
          steps: last.step,
          trainMinutes: Number(last.state.elapsedMs ?? 0) / 60_000,
          ...(ev.valBleu4 === undefined ? {} : { valBleu4: ev.valBleu4 }),
          scores: evaluateCaptions(ev.captions, refs, trainCounts),
          decodeSeconds: ev.decodeSeconds,
        });
      }

    const reportDir = resolve(options.reportOut ?? join(out, 'report'));
    await mkdir(join(reportDir, 'examples'), { recursive: true });
    // Three test images spread over the split, the same for every model.
    const examples = [0, Math.floor(test.length / 3), Math.floor((2 * test.length) / 3)].map((i) => test[i]!);
    const exampleRows = [];
    for (const im of examples) {
      const file = `examples/${im.id}${extname(im.path)}`;
      await copyFile(im.path, join(reportDir, file));
      const index = test.indexOf(im);
      exampleRows.push({
        file,
        reference: im.captions[0] ?? '',
        captions: Object.fromEntries(Object.entries(captionsByModel).map(([m, c]) => [m, c[index] ?? ''])),
      });
    }
    const machine = `${cpus()[0]?.model.trim() ?? 'cpu'} x${availableParallelism()}, Node ${process.version}, onnxruntime-node ${ort.env.versions.node ?? '?'}`;
    const flags = [
      ...(options.arch === undefined ? [] : [`--arch ${archs.join(',')}`]),
      ...(options.heads === undefined ? [] : [`--heads ${heads.join(',')}`]),
      ...(options.preset === undefined ? [] : [`--preset ${preset}`]),
      ...(options.budgetMinutes === undefined ? [] : [`--budget-minutes ${options.budgetMinutes}`]),
      ...(options.maxEpochs === undefined ? [] : [`--max-epochs ${options.maxEpochs}`]),
      ...(options.maxUpdates === undefined ? [] : [`--max-updates ${options.maxUpdates}`]),
      ...(options.budgetMinutes === undefined && options.maxEpochs === undefined && options.maxUpdates === undefined
        ? ['--converge']
        : []),
      ...(trainFlags.length === 0 ? [] : [`--train-flags "${trainFlags.join(' ')}"`]),
      ...(options.beam === undefined ? [] : [`--beam ${beam}`]),
    ];
    const markdown = formatResults({
      rows,
      examples: exampleRows,
      machine,
      budget: describeBudget(budget),
      data: basename(dataDir),
      beam,
      preset,
      testImages: test.length,
      command: `frost experiment caption-heads --data ${options.data} ${flags.join(' ')}`,
      wallMinutes: (Date.now() - started) / 60_000,
    });
    const json = join(reportDir, 'results.json');
    await writeFile(
      json,
      `${JSON.stringify({ machine, budget, beam, preset, rows, examples: exampleRows }, null, 2)}\n`,
    );
    const md = join(reportDir, 'results.md');
    await writeFile(md, `${markdown}\n`);
    log(`report: ${md}`);
    return { runDirs: archs.flatMap((a) => heads.map((h) => runDir(a, h))), summary: md };
  },
});
