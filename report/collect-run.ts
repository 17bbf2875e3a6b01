import { basename } from 'node:path';
import { isSubwordKind } from '../core/subword/subword-spec.ts';
import { readCheckpointInfo, RunFolder } from '../train/run-folder.ts';
import { inspectTrainedModel } from './collect-model.ts';
import { measureSpeed } from './collect-speed.ts';
import {
  loadTestSet,
  loadTrainingTargets,
  scoreTest,
  testHypotheses,
  testSegments,
  type TestSegments,
  wordCounts,
} from './collect-test.ts';
import { lastGain, validationCurve } from './convergence.ts';
import { ensureExport } from './find-export.ts';
import { readMetrics, stopKindOf } from './run-status.ts';
import type { RunReport } from './schema.ts';
import { describeStoppingRule } from './stopping-rule.ts';

export interface CollectRunOptions {
  /** Beam width of the test translations and the latency runs. @default DEFAULT_TEST_BEAM */
  beam?: number;
  /** Training frequency below which a word is rare. */
  rareThreshold: number;
  /** Where to export the run when no current export exists (see report/find-export.ts). */
  exportDir?: string;
  /** The export's parity bar (export/parity.ts); @default 1e-4 */
  parityTolerance?: number;
  log?: (line: string) => void;
}

/** The test translations' beam, as the paper's Table 2 decodes. */
export const DEFAULT_TEST_BEAM = 5;

/**
 * A run's row of the report, before it is compared with the other runs (baseline, decrease). A row taken from a
 * committed report keeps its `bleuDeltaInterval`, which the comparison keeps only beside the same baseline.
 */
export type CollectedRun = Omit<RunReport, 'baseline' | 'learnableDecrease' | 'bleuDelta'>;

/** A run folder's row, and its test translations' BLEU statistics, from which its comparisons are resampled. */
export interface CollectedFolder {
  run: CollectedRun;
  segments: TestSegments;
}

/**
 * Everything the report says about one run folder: exports it if needed, translates the test set
 * (cached), times the export, and reads the trained model's parameters and target vectors.
 */
export async function collectRun(runDir: string, opts: CollectRunOptions): Promise<CollectedFolder> {
  const beam = opts.beam ?? DEFAULT_TEST_BEAM;
  // `frost report` hands a run of another report (a language model's) to that report's collector
  // (choose-report.ts); here it is refused as not a translation run.
  const run = await RunFolder.openTask(runDir, 'translation');
  const { config } = run;
  const exp = await ensureExport(runDir, {
    preferred: opts.exportDir,
    parityTolerance: opts.parityTolerance,
    log: opts.log,
  });
  const vocabs = { src: await run.vocab('src'), tgt: await run.vocab('tgt') };
  if (!vocabs.tgt.frequencies)
    throw new Error(
      `${run.path('tgtVocab')} has no training frequencies (written before they were kept): the rare-word and norm analyses need them`,
    );
  const set = await loadTestSet(config);
  opts.log?.(`${basename(runDir)}: test set (${set.sources.length} sentences, beam ${beam})`);
  const hyps = await testHypotheses(runDir, exp.modelDir, exp.checkpoint, set, beam);
  const tokenizer = await run.tokenizer({ [config.data.src]: vocabs.src, [config.data.tgt]: vocabs.tgt });
  // Subword runs count words of the text too, against word counts of the training targets.
  const trainWords = isSubwordKind(config.vocab.kind) ? wordCounts(await loadTrainingTargets(config)) : undefined;
  const test = scoreTest(hyps, set, {
    tgtVocab: vocabs.tgt,
    tokenizer,
    tgtLang: config.data.tgt,
    beam,
    rareThreshold: opts.rareThreshold,
    ...(trainWords ? { trainWords } : {}),
  });
  opts.log?.(`${basename(runDir)}: sizes and latency`);
  const speed = await measureSpeed(runDir, exp.modelDir, exp.card, exp.checkpoint, set, beam);
  const findings = await inspectTrainedModel(run, exp.checkpoint, vocabs, exp.card.params.generated);

  // Training progress is the last checkpoint's, not the exported (best) one's.
  const last = (await readCheckpointInfo(runDir, 'last')) ?? exp.checkpoint;
  // A run that never validated saved bestBleu = -Infinity, which JSON wrote as null.
  const bestBleu = typeof last.state.bestBleu === 'number' ? last.state.bestBleu : NaN;
  const valBleuCurve = validationCurve(await readMetrics(runDir), last.step);
  const row: CollectedRun = {
    id: basename(runDir),
    runDir,
    modelDir: exp.modelDir,
    arch: config.arch,
    preset: config.preset,
    head: config.head.name,
    src: config.data.src,
    tgt: config.data.tgt,
    seed: config.seed,
    training: {
      epochs: last.epoch,
      steps: last.step,
      minutes: Number(last.state.elapsedMs ?? 0) / 60_000,
      budgetMinutes: config.maxMinutes ?? null,
      bestValBleu: Number.isFinite(bestBleu) ? bestBleu : null,
      stopReason: typeof last.state.stopReason === 'string' ? last.state.stopReason : null,
      stopKind: stopKindOf(last.state),
      stoppingRule: describeStoppingRule(config.schedule),
      budgetEpochs: config.epochs ?? null,
      budgetUpdates: config.maxUpdates ?? null,
      valBleuCurve,
      lastGain: lastGain(valBleuCurve),
    },
    checkpoint: {
      which: exp.checkpoint.which,
      sha256: exp.checkpoint.sha256,
      step: exp.checkpoint.step,
      epoch: exp.checkpoint.epoch,
    },
    params: {
      learnable: exp.card.params.learnable,
      frozen: exp.card.params.frozen,
      generated: exp.card.params.generated,
      components: findings.components,
    },
    onnx: speed.onnx,
    latency: speed.latency,
    test,
    matrix: findings.matrix,
    ...(findings.matrixNote ? { matrixNote: findings.matrixNote } : {}),
  };
  return { run: row, segments: testSegments(hyps, set) };
}
