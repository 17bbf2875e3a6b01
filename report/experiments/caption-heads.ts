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
import { type ImageCache, loadImageCache, normaliseBatch } from '../../train/data/image-cache.ts';
import { REPO_ROOT, resolveDataRoot } from '../../train/data/paths.ts';
import { makeToyCaptions } from '../../train/data/toy-captions.ts';
import { DEFAULT_IMAGE_SPEC, type ImageSpec } from '../../core/image/preprocess.ts';
import { readCheckpointInfo, RunFolder } from '../../train/run-folder.ts';
import { captionCacheDir } from '../../train/tasks/caption.ts';
import { cachedJson } from '../cache.ts';
import {
  CAPTION_RESULTS_FILE,
  type CaptionResults,
  type CaptionRow,
  type ExampleRow,
  formatResults,
} from '../caption-results.ts';
import { type RunBudget, stopKindOf } from '../run-status.ts';
import { gridBudget } from './grid.ts';
import { type ExperimentOptions, registerExperiment } from './registry.ts';
import { captionRowMismatch, readReportedCaptions, type WantedCaptionRun } from './reported-runs.ts';
import { refuseOtherRun } from './run-identity.ts';
import { budgetSuffix, checkBudget, describeBudget, finishedRuns, trainSideBySide } from './side-by-side.ts';
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
  cache: ImageCache,
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

/** One run of the grid, in `<out>/<arch>-<head>/`; its model name (`<arch>-<head>`) names its captions. */
interface CaptionRun {
  arch: string;
  head: string;
  name: string;
  dir: string;
}

/** A test image the report shows with every model's caption. */
interface ExampleImage {
  /** Its index in the test split, which picks it: the same image for every run of the grid. */
  index: number;
  image: CaptionDataset['images'][number];
  /** Its copy's path relative to the report folder, by which results.json keeps its captions. */
  file: string;
}

/** Three test images spread over the split, the same for every model. */
function exampleImages(test: CaptionDataset['images']): ExampleImage[] {
  return [0, Math.floor(test.length / 3), Math.floor((2 * test.length) / 3)].map((index) => {
    const image = test[index]!;
    return { index, image, file: `examples/${image.id}${extname(image.path)}` };
  });
}

/** A run's row of the results, and its captions of the example images by file. */
interface ReportedRun {
  row: CaptionRow;
  captions: Record<string, string>;
}

/** Model `name`'s captions of the example images in `results`, by file; null when it lacks one (other images). */
function keptCaptions(results: CaptionResults, name: string, examples: ExampleImage[]): Record<string, string> | null {
  const captions: Record<string, string> = {};
  for (const { file } of examples) {
    const caption = results.examples.find((e) => e.file === file)?.captions[name];
    if (caption === undefined) return null;
    captions[file] = caption;
  }
  return captions;
}

/**
 * The grid's runs that have no folder here but a finished row in the results at `reportDir` (results committed in
 * another checkout): reused with their example captions, so results.md comes out the same, not trained again. A row
 * of some other run is left to be overwritten, with a line.
 */
async function keptRuns(
  grid: CaptionRun[],
  want: Omit<WantedCaptionRun, 'arch' | 'head'>,
  budget: RunBudget,
  examples: ExampleImage[],
  reportDir: string,
  log: (line: string) => void,
): Promise<Map<string, ReportedRun>> {
  const { path, results } = await readReportedCaptions(reportDir);
  const kept = new Map<string, ReportedRun>();
  for (const run of grid) {
    const row = results?.rows.find((r) => `${r.arch}-${r.head}` === run.name);
    if (results === undefined || row === undefined || RunFolder.exists(run.dir)) continue;
    const captions = keptCaptions(results, run.name, examples);
    const mismatch =
      captionRowMismatch(row, results, { ...want, arch: run.arch, head: run.head }, budget) ??
      (captions === null ? "its example images are not this grid's" : null);
    if (mismatch !== null || captions === null) {
      log(`${run.dir}: ${path} has a row '${run.name}' of another run (${mismatch}); not reused`);
      continue;
    }
    log(
      `${run.dir}: no run folder; finished in ${path} (${row.steps} steps, test BLEU-4 ${(100 * row.scores.bleu4).toFixed(1)}), reused`,
    );
    kept.set(run.dir, { row, captions });
  }
  return kept;
}

/** Refuses to reuse or resume a folder that holds some other run, naming what differs. */
async function checkSameRun(run: CaptionRun, want: { preset: string; seed: number }): Promise<void> {
  const { config: c } = await RunFolder.open(run.dir);
  refuseOtherRun(
    run.dir,
    { task: c.task, arch: c.arch, head: c.head.name, preset: c.preset, seed: c.seed },
    { task: 'caption', arch: run.arch, head: run.head, ...want },
  );
}

/**
 * Trains what the runs still lack, the heads of each architecture side by side (they share the machine's noise),
 * the architectures one after another. Finished runs are left alone and unfinished ones resumed (side-by-side.ts).
 */
async function trainRuns(
  runs: CaptionRun[],
  grid: {
    archs: string[];
    dataDir: string;
    preset: string;
    seed: number;
    /** The image cache every trainer reads, built once before they start. */
    cacheDir: string;
    trainFlags: string[];
    budget: RunBudget;
    out: string;
    /** Every trainer's thread counts. */
    env: Record<string, string>;
    check: (run: CaptionRun) => Promise<void>;
    log: (line: string) => void;
  },
): Promise<void> {
  for (const arch of grid.archs) {
    const group = runs.filter((r) => r.arch === arch);
    await trainSideBySide(
      group.map((run) => ({
        dir: run.dir,
        name: run.name,
        newRunArgv: [
          'train',
          '--task',
          'caption',
          '--arch',
          arch,
          '--head',
          run.head,
          '--data',
          grid.dataDir,
          '--preset',
          grid.preset,
          '--seed',
          String(grid.seed),
          '--image-cache',
          grid.cacheDir,
          '--out',
          run.dir,
          ...grid.trainFlags,
        ],
      })),
      {
        budget: grid.budget,
        label: `${arch} with ${group.map((r) => r.head).join(', ')}`,
        logsDir: join(grid.out, 'logs'),
        env: grid.env,
        check: (r) => grid.check(group.find((run) => run.dir === r.dir)!),
        log: grid.log,
      },
    );
  }
}

/**
 * A finished run folder's row and its captions of the example images: exported and the test images captioned
 * (both once per checkpoint and beam), then scored.
 */
async function scoredRun(
  run: CaptionRun,
  ctx: {
    out: string;
    test: CaptionDataset['images'];
    cache: ImageCache;
    beam: number;
    /** Training word counts, for the rare-word share. */
    trainCounts: Map<string, number>;
    examples: ExampleImage[];
    log: (line: string) => void;
  },
): Promise<ReportedRun> {
  ctx.log(`${run.name}: test captions, beam ${ctx.beam}`);
  const ev = await evaluateRun(run.dir, join(ctx.out, 'artifacts', run.name), ctx.test, ctx.cache, ctx.beam);
  const { config } = await RunFolder.open(run.dir);
  const last = (await readCheckpointInfo(run.dir, 'last'))!;
  const row: CaptionRow = {
    arch: run.arch,
    head: run.head,
    preset: config.preset,
    seed: config.seed,
    budget: gridBudget({ budgetMinutes: config.maxMinutes, maxEpochs: config.epochs, maxUpdates: config.maxUpdates }),
    stopKind: stopKindOf(last.state),
    learnable: ev.learnable,
    frozen: ev.frozen,
    epochs: `${last.epoch} (${String(last.state.stopReason ?? 'unfinished')})`,
    steps: last.step,
    trainMinutes: Number(last.state.elapsedMs ?? 0) / 60_000,
    ...(ev.valBleu4 === undefined ? {} : { valBleu4: ev.valBleu4 }),
    scores: evaluateCaptions(
      ev.captions,
      ctx.test.map((im) => im.captions),
      ctx.trainCounts,
    ),
    decodeSeconds: ev.decodeSeconds,
  };
  return { row, captions: Object.fromEntries(ctx.examples.map((ex) => [ex.file, ev.captions[ex.index] ?? ''])) };
}

/**
 * The paper's captioning experiment (its Table 1): `show-tell` and `show-attend-tell`, each with the
 * `learned` and the `fixed-uniform` output layer, trained side by side under one budget (an epoch cap,
 * the stopping rule, or minutes), resumable like mt-heads; then exported, the test images captioned with
 * beam search, and scored (coco-caption BLEU, ROUGE-L, CIDEr-D, vocabulary usage and the rare-word share,
 * both without `<unk>`), with three example images and every model's caption. Like mt-heads, a run whose
 * folder is gone but whose finished row the results at the report folder keep is reused, and `--report-only`
 * reports the runs finished so far, training nothing.
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
    const seed = options.seed ?? 1;
    const beam = options.beam ?? DEFAULT_BEAM;
    const test = imagesOf(dataset, ['test']);
    const examples = exampleImages(test);
    const reportDir = resolve(options.reportOut ?? join(out, 'report'));
    const grid = archs.flatMap((arch) =>
      heads.map((head) => ({ arch, head, name: `${arch}-${head}`, dir: join(out, `${arch}-${head}`) })),
    );
    const want = { preset, seed, data: basename(dataDir), beam };
    const kept = await keptRuns(grid, want, budget, examples, reportDir, log);
    const todo = grid.filter((r) => !kept.has(r.dir));
    const check = (run: CaptionRun) => checkSameRun(run, { preset, seed });
    const finished = options.reportOnly ? new Set((await finishedRuns(todo, budget, check)).map((r) => r.dir)) : null;
    if (finished?.size === 0 && kept.size === 0)
      throw new Error(
        `no run of ${out} has finished yet, and ${join(reportDir, CAPTION_RESULTS_FILE)} keeps none: nothing to report; train the grid first (without --report-only)`,
      );
    // The image cache is built here once, before the side-by-side trainers would each build it.
    const cacheDir = captionCacheDir(dataset);
    const cache = await loadImageCache(dataset, { cacheDir, spec: imageSpec(trainFlags) });
    if (finished === null) {
      const gemmThreads = Math.max(1, Math.floor(availableParallelism() / heads.length));
      const env = { FROST_WASM_THREADS: '1', FROST_NATIVE_GEMM_THREADS: String(gemmThreads) };
      await trainRuns(todo, { archs, dataDir, preset, seed, cacheDir, trainFlags, budget, out, env, check, log });
    }
    // Only the finished runs are reported, in the grid's order; when training, trainSideBySide finishes them all.
    const reported = grid.filter((r) => kept.has(r.dir) || (finished?.has(r.dir) ?? true));
    const scoring = { out, test, cache, beam, trainCounts: captionWordCounts(dataset), examples, log };
    const rows: CaptionRow[] = [];
    const exampleCaptions = new Map<string, Record<string, string>>();
    for (const run of reported) {
      const { row, captions } = kept.get(run.dir) ?? (await scoredRun(run, scoring));
      rows.push(row);
      exampleCaptions.set(run.name, captions);
    }

    await mkdir(join(reportDir, 'examples'), { recursive: true });
    const exampleRows: ExampleRow[] = [];
    for (const { image, file } of examples) {
      await copyFile(image.path, join(reportDir, file));
      exampleRows.push({
        file,
        reference: image.captions[0] ?? '',
        captions: Object.fromEntries(reported.map((r) => [r.name, exampleCaptions.get(r.name)?.[file] ?? ''])),
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
      ...(options.reportOnly === true ? ['--report-only'] : []),
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
      gridRuns: grid.length,
      command: `frost experiment caption-heads --data ${options.data} ${flags.join(' ')}`,
      wallMinutes: (Date.now() - started) / 60_000,
    });
    const results: CaptionResults = {
      machine,
      budget,
      beam,
      preset,
      data: basename(dataDir),
      rows,
      examples: exampleRows,
    };
    await writeFile(join(reportDir, CAPTION_RESULTS_FILE), `${JSON.stringify(results, null, 2)}\n`);
    const md = join(reportDir, 'results.md');
    await writeFile(md, `${markdown}\n`);
    log(`report: ${md}`);
    return { runDirs: reported.map((r) => r.dir), summary: md };
  },
});
