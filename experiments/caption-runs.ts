import { availableParallelism } from 'node:os';
import { basename, dirname, extname, join } from 'node:path';
import { z } from 'zod';
import { evaluateCaptions } from '../core/metrics/caption-eval.ts';
import { loadCaptionModelDir } from '../core/runtime/load-node.ts';
import type { CaptionDataset } from '../train/data/captions.ts';
import { type ImageCache, normaliseBatch } from '../train/data/image-cache.ts';
import { readCheckpointInfo, RunFolder } from '../train/run-folder.ts';
import { cachedJson } from '../report/cache.ts';
import type { CaptionResults, CaptionRow } from './caption-results.ts';
import { lastGain, validationCurve } from '../report/convergence.ts';
import { readMetrics, type RunBudget, stopKindOf } from '../report/run-status.ts';
import { gridBudget } from './grid.ts';
import { captionRowMismatch, keepReportedRuns, readReportedCaptions, type WantedCaptionRun } from './reported-runs.ts';
import { refuseOtherArguments, refuseOtherRun } from './run-identity.ts';
import { trainSideBySide, trainingGroups } from './side-by-side.ts';
import { runFrost } from './spawn-frost.ts';

/**
 * The runs of caption-heads' grid (`<out>/<arch>-<head>/`): trained side by side, taken from the committed
 * results.json when their folder is gone (reported-runs.ts), or exported, captioned and scored.
 */

/** What a finished model's test captions and scores are computed from; cached per checkpoint and beam. */
const evalSchema = z.object({
  learnable: z.number(),
  frozen: z.number(),
  valBleu4: z.number().optional(),
  captions: z.array(z.string()),
  decodeSeconds: z.number(),
  // Required, so a cache from before it was kept is decoded again and every row says when it was decoded.
  decodedAt: z.string(),
});

/** Exports a finished run (once per checkpoint) and captions the test images with beam search; and that checkpoint. */
async function evaluateRun(
  runDir: string,
  modelDir: string,
  test: CaptionDataset['images'],
  cache: ImageCache,
  beam: number,
): Promise<z.infer<typeof evalSchema> & { checkpoint: string }> {
  const best = (await readCheckpointInfo(runDir, 'best')) ?? (await readCheckpointInfo(runDir, 'last'));
  if (!best) throw new Error(`${runDir} has no checkpoint to evaluate`);
  const key = { checkpoint: best.sha256, beam, images: test.length, first: test[0]?.id ?? '' };
  const evaluated = cachedJson(join(runDir, 'eval', `caption-test-beam${beam}.json`), key, evalSchema, async () => {
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
      const decodedAt = new Date().toISOString();
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
        decodedAt,
      };
    } finally {
      await runtime.release();
    }
  });
  return { ...(await evaluated), checkpoint: best.sha256 };
}

/** One run of the grid, in `<out>/<arch>-<head>/`; its model name (`<arch>-<head>`) names its captions. */
export interface CaptionRun {
  arch: string;
  head: string;
  name: string;
  dir: string;
}

/** A test image the report shows with every model's caption. */
export interface ExampleImage {
  /** Its index in the test split, which picks it: the same image for every run of the grid. */
  index: number;
  image: CaptionDataset['images'][number];
  /** Its copy's path relative to the report folder, by which results.json keeps its captions. */
  file: string;
}

/** Three test images spread over the split, the same for every model. */
export function exampleImages(test: CaptionDataset['images']): ExampleImage[] {
  return [0, Math.floor(test.length / 3), Math.floor((2 * test.length) / 3)].map((index) => {
    const image = test[index]!;
    return { index, image, file: `${image.id}${extname(image.path)}` };
  });
}

/** A run's row of the results, and its captions of the example images by file. */
export interface ReportedRun {
  row: CaptionRow;
  captions: Record<string, string>;
  /**
   * Every test image's caption, in the split's order, and the checkpoint they were decoded from: a run scored here
   * has them, a row kept from results not.
   */
  testCaptions?: string[];
  checkpoint?: string;
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
 * another checkout): reused with their example captions, so results.md comes out the same (reported-runs.ts).
 */
export async function keptRuns(
  grid: CaptionRun[],
  want: Omit<WantedCaptionRun, 'arch' | 'head'>,
  budget: RunBudget,
  examples: ExampleImage[],
  reportDir: string,
  log: (line: string) => void,
): Promise<Map<string, ReportedRun>> {
  const { path, results } = await readReportedCaptions(reportDir);
  return keepReportedRuns<CaptionRun, ReportedRun>(
    grid,
    path,
    (run) => {
      const row = results?.rows.find((r) => `${r.arch}-${r.head}` === run.name);
      if (results === undefined || row === undefined) return undefined;
      const mismatch = captionRowMismatch(row, results, { ...want, arch: run.arch, head: run.head }, budget);
      if (mismatch !== null) return { mismatch };
      const captions = keptCaptions(results, run.name, examples);
      if (captions === null) return { mismatch: "its example images are not this grid's" };
      const summary = `${row.steps} steps, test BLEU-4 ${(100 * row.scores.bleu4).toFixed(1)}`;
      return { kept: { row, captions }, summary };
    },
    log,
  );
}

/** How the grid starts its runs: the same for each, but for the architecture and head. */
export interface CaptionGridSettings {
  dataDir: string;
  preset: string;
  seed: number;
  /** The image cache every trainer reads, built once before they start. */
  cacheDir: string;
  trainFlags: readonly string[];
}

/** The `frost train` arguments that start one of the grid's runs: the grid's settings, then its --train-flags. */
function newRunArguments(run: CaptionRun, grid: CaptionGridSettings): string[] {
  return [
    ...['--task', 'caption', '--arch', run.arch, '--head', run.head, '--data', grid.dataDir],
    ...['--preset', grid.preset, '--seed', String(grid.seed), '--image-cache', grid.cacheDir, '--out', run.dir],
    ...grid.trainFlags,
  ];
}

/** Refuses to reuse or resume a folder that holds some other run, naming what differs. */
export async function checkSameRun(run: CaptionRun, grid: CaptionGridSettings): Promise<void> {
  const { config: c } = await RunFolder.open(run.dir);
  refuseOtherRun(
    run.dir,
    { task: c.task, arch: c.arch, head: c.head.name, preset: c.preset, seed: c.seed },
    { task: 'caption', arch: run.arch, head: run.head, preset: grid.preset, seed: grid.seed },
  );
  refuseOtherArguments(run.dir, c.argv, newRunArguments(run, grid));
}

/**
 * Trains what the runs still lack, the heads of each architecture side by side (they share the machine's noise),
 * the architectures one after another; or, with `jobs`, the whole grid `jobs` runs at a time, so that a core freed
 * by a quick architecture's runs goes to a slow one's. Finished runs are left alone and unfinished ones resumed
 * (side-by-side.ts).
 */
export async function trainRuns(
  runs: CaptionRun[],
  grid: CaptionGridSettings & {
    budget: RunBudget;
    out: string;
    /** Every trainer's thread counts. */
    env: Record<string, string>;
    /** At most this many runs training at once, queued across architectures. @default each architecture's heads */
    jobs?: number;
    check: (run: CaptionRun) => Promise<void>;
    log: (line: string) => void;
  },
): Promise<void> {
  for (const group of trainingGroups(runs, (r) => r.arch, grid.jobs)) {
    await trainSideBySide(
      group.map((run) => ({
        dir: run.dir,
        name: run.name,
        newRunArgv: ['train', ...newRunArguments(run, grid)],
      })),
      {
        budget: grid.budget,
        logsDir: join(grid.out, 'logs'),
        env: grid.env,
        ...(grid.jobs === undefined ? {} : { jobs: grid.jobs }),
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
export async function scoredRun(
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
    lastGain: lastGain(validationCurve(await readMetrics(run.dir), last.step)),
    scores: evaluateCaptions(
      ev.captions,
      ctx.test.map((im) => im.captions),
      ctx.trainCounts,
    ),
    decodeSeconds: ev.decodeSeconds,
    decodedAt: ev.decodedAt,
  };
  return {
    row,
    captions: Object.fromEntries(ctx.examples.map((ex) => [ex.file, ev.captions[ex.index] ?? ''])),
    testCaptions: ev.captions,
    checkpoint: ev.checkpoint,
  };
}
