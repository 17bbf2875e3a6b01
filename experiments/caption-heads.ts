import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus } from 'node:os';
import { basename, join, relative, resolve, sep } from 'node:path';
import { headNames, resolveArchConfig } from '../models/index.ts';
import { captionWordCounts, imagesOf, loadCaptionDataset } from '../train/data/captions.ts';
import { loadImageCache } from '../train/data/image-cache.ts';
import { REPO_ROOT, resolveDataRoot } from '../train/data/paths.ts';
import { makeToyCaptions } from '../train/data/toy-captions.ts';
import { DEFAULT_IMAGE_SPEC, type ImageSpec } from '../core/image/preprocess.ts';
import { nodeRuntimeVersion } from '../core/runtime/ort-node.ts';
import { captionCacheDir } from '../train/tasks/caption.ts';
import {
  CAPTION_RESULTS_FILE,
  type CaptionResults,
  type CaptionRow,
  type ExampleRow,
  formatResults,
} from './caption-results.ts';
import { gridBudget, sideBySideThreads } from './grid.ts';
import { checkArch, type ExperimentDefinition, type ExperimentOptions, registerExperiment } from './registry.ts';
import { budgetSuffix, checkBudget, describeBudget, finishedRuns } from './side-by-side.ts';
import {
  type CaptionRun,
  checkSameRun,
  exampleImages,
  keptRuns,
  type ReportedRun,
  scoredRun,
  trainRuns,
} from './caption-runs.ts';
import { withBleu4Intervals } from './caption-intervals.ts';
import { readReportedCaptions } from './reported-runs.ts';

const DEFAULTS = {
  arch: 'show-tell,show-attend-tell',
  heads: ['learned', 'fixed-uniform'],
  preset: 'small',
  out: 'runs/experiments/caption-heads',
  /** The paper's Table 1 decodes with beam search; bench/caption-heads.ts used 10. */
  beam: 10,
};

/** `frost experiment --seed`'s default, left out of the report's command. */
const DEFAULT_SEED = 1;
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

/** A `frost train` flag's value among `--train-flags` (`--name V` or `--name=V`; the last wins, as in commander). */
function trainFlag(trainFlags: readonly string[], name: string): string | undefined {
  let value: string | undefined;
  trainFlags.forEach((flag, i) => {
    if (flag === name) value = trainFlags[i + 1] ?? '';
    else if (flag.startsWith(`${name}=`)) value = flag.slice(name.length + 1);
  });
  return value;
}

/** The image spec the runs train with: `--image-size` among the train flags, else the default (as `frost train`). */
export function imageSpec(trainFlags: readonly string[]): ImageSpec {
  const size = trainFlag(trainFlags, '--image-size');
  if (size === undefined) return DEFAULT_IMAGE_SPEC;
  const n = Number(size);
  if (!Number.isInteger(n) || n <= 0)
    throw new RangeError(`--train-flags: --image-size must be a positive integer, got '${size}'`);
  return { ...DEFAULT_IMAGE_SPEC, size: n };
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
const CAPTION_HEADS: ExperimentDefinition = {
  name: 'caption-heads',
  summary:
    "train show-tell and show-attend-tell with learned and fixed output layers, score test captions (the paper's Table 1)",
  inputKind: 'image',
  archList: true,
  data: 'flickr8k',
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
      checkArch(CAPTION_HEADS, arch);
    }
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
    const seed = options.seed ?? DEFAULT_SEED;
    const beam = options.beam ?? DEFAULTS.beam;
    const test = imagesOf(dataset, ['test']);
    const examples = exampleImages(test);
    const reportDir = resolve(options.reportOut ?? join(out, 'report'));
    const grid = archs.flatMap((arch) =>
      heads.map((head) => ({ arch, head, name: `${arch}-${head}`, dir: join(out, `${arch}-${head}`) })),
    );
    const want = { preset, seed, data: basename(dataDir), beam, trainFlags };
    const kept = await keptRuns(grid, want, budget, examples, reportDir, log);
    const todo = grid.filter((r) => !kept.has(r.dir));
    // The image cache is built below, once, before the side-by-side trainers would each build it.
    const cacheDir = captionCacheDir(dataset);
    const settings = { dataDir, preset, seed, cacheDir, trainFlags };
    const check = (run: CaptionRun) => checkSameRun(run, settings);
    const finished = options.reportOnly ? new Set((await finishedRuns(todo, budget, check)).map((r) => r.dir)) : null;
    if (finished?.size === 0 && kept.size === 0)
      throw new Error(
        `no run of ${out} has finished yet, and ${join(reportDir, CAPTION_RESULTS_FILE)} keeps none: nothing to report; train the grid first (without --report-only)`,
      );
    const cache = await loadImageCache(dataset, { cacheDir, spec: imageSpec(trainFlags) });
    if (finished === null) {
      // The cores shared among the trainers at once; the wasm pool stays at one thread.
      const env = sideBySideThreads(options.jobs ?? heads.length, 1);
      await trainRuns(todo, {
        ...settings,
        budget,
        out,
        env,
        ...(options.jobs === undefined ? {} : { jobs: options.jobs }),
        check,
        log,
      });
    }
    // Only the finished runs are reported, in the grid's order; when training, trainSideBySide finishes them all.
    const reported = grid.filter((r) => kept.has(r.dir) || (finished?.has(r.dir) ?? true));
    const scoring = { out, test, cache, beam, trainCounts: captionWordCounts(dataset), examples, log };
    const scored: ReportedRun[] = [];
    const exampleCaptions = new Map<string, Record<string, string>>();
    for (const run of reported) {
      const one = kept.get(run.dir) ?? (await scoredRun(run, scoring));
      scored.push(one);
      exampleCaptions.set(run.name, one.captions);
    }
    // The committed rows (keptRuns read them too): their intervals stand for the same two checkpoints.
    const { results: committed } = await readReportedCaptions(reportDir);
    const rows: CaptionRow[] = withBleu4Intervals(
      scored,
      test.map((im) => im.captions),
      (row) => committed?.rows.find((r) => r.arch === row.arch && r.head === row.head),
    );

    // The example images stay in the data set, linked from the report, never copied beside it: a report is
    // committed, and the images are not ours to redistribute.
    await mkdir(reportDir, { recursive: true });
    const imageLinks: Record<string, string> = {};
    const exampleRows: ExampleRow[] = [];
    for (const { image, file } of examples) {
      imageLinks[file] = relative(reportDir, image.path).split(sep).join('/');
      exampleRows.push({
        file,
        reference: image.captions[0] ?? '',
        captions: Object.fromEntries(reported.map((r) => [r.name, exampleCaptions.get(r.name)?.[file] ?? ''])),
      });
    }
    const machine = `${cpus()[0]?.model.trim() ?? 'cpu'} x${availableParallelism()}, Node ${process.version}, onnxruntime-node ${nodeRuntimeVersion() ?? '?'}`;
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
      ...(seed === DEFAULT_SEED ? [] : [`--seed ${seed}`]),
      // Where the runs are and where this file goes: without them, the command would not find this grid again.
      ...(options.out === undefined ? [] : [`--out ${options.out}`]),
      ...(options.reportOut === undefined ? [] : [`--report-out ${options.reportOut}`]),
      ...(options.reportOnly === true ? ['--report-only'] : []),
    ];
    const markdown = formatResults({
      rows,
      examples: exampleRows,
      imageLinks,
      machine,
      budget: describeBudget(budget),
      data: basename(dataDir),
      beam,
      preset,
      pretrainedEncoder: trainFlag(trainFlags, '--encoder') !== undefined,
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
      trainFlags,
      rows,
      examples: exampleRows,
    };
    await writeFile(join(reportDir, CAPTION_RESULTS_FILE), `${JSON.stringify(results, null, 2)}\n`);
    const md = join(reportDir, 'results.md');
    await writeFile(md, `${markdown}\n`);
    log(`report: ${md}`);
    return { runDirs: reported.map((r) => r.dir), summary: md };
  },
};
registerExperiment(CAPTION_HEADS);
