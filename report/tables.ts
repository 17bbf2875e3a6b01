import { CONVERGENCE_MARGIN, CONVERGENCE_WINDOW, type Convergence, convergenceOf } from './convergence.ts';
import {
  formatBytes,
  formatCount,
  formatFixed1,
  formatFixed2,
  formatFixed3,
  formatMs,
  formatPercent,
  formatSigned2,
  MISSING,
} from './format.ts';
import type { Report, RunReport } from './schema.ts';
import { formatMeanSd, seedGroups } from './seeds.ts';
import { formatTimedAt, timedApart } from './timed-apart.ts';

/**
 * The report's tables as plain data, rendered by both render-md.ts and render-html.ts so the two
 * always show the same numbers. A cell showing a number of report.json names it by `path`
 * (`runs.2.test.bleu`); the HTML keeps that as `data-path`, so a reader or test can check it.
 */
export interface Cell {
  text: string;
  path?: string;
}

export interface Table {
  id: string;
  title: string;
  note?: string;
  header: string[];
  /** Columns holding numbers (right-aligned). */
  numeric: boolean[];
  rows: Cell[][];
}

export const plain = (text: string): Cell => ({ text });

/** A cell showing the value at `path` below `runs.<i>`, formatted by `format`. */
export function value(report: Report, i: number, path: string, format: (v: number | null | undefined) => string): Cell {
  let v: unknown = report.runs[i];
  for (const key of path.split('.')) v = (v as Record<string, unknown> | undefined)?.[key];
  return { text: format(v as number | null | undefined), path: `runs.${i}.${path}` };
}

export const pairLabel = (r: Pick<RunReport, 'src' | 'tgt'>) => `${r.src}→${r.tgt}`;

export function unique<T>(xs: T[]): T[] {
  return [...new Set(xs)];
}

/** The paper's Table 2: test BLEU, one row per head, one column per language pair. */
function bleuTable(report: Report): Table {
  const pairs = unique(report.runs.map(pairLabel));
  const heads = unique(report.runs.map((r) => r.head));
  return {
    id: 'bleu',
    title: `Test BLEU, beam ${report.settings.beam}`,
    note: "The layout of the paper's Table 2. sacreBLEU 13a on detokenised, lower-cased output against the raw references. A head with runs of several seeds on a pair shows their mean ± standard deviation.",
    header: ['head', ...pairs],
    numeric: [false, ...pairs.map(() => true)],
    rows: heads.map((head) => [plain(head), ...pairs.map((pair) => bleuCell(report, head, pair))]),
  };
}

/**
 * A head's test BLEU on a pair: its run's, or where it has runs of several seeds their mean ± standard deviation
 * (report/seeds.ts), which names no single value of report.json.
 */
export function bleuCell(report: Report, head: string, pair: string, runs?: readonly number[]): Cell {
  const at = (runs ?? report.runs.map((_, i) => i)).filter((i) => {
    const r = report.runs[i]!;
    return r.head === head && pairLabel(r) === pair;
  });
  if (at.length === 0) return plain(MISSING);
  // The first run's, and its other seeds' (a run of another architecture or preset is not another seed).
  const [seeds] = seedGroups(at.map((i) => report.runs[i]!));
  if (seeds!.length === 1) return value(report, at[0]!, 'test.bleu', formatFixed2);
  const text = formatMeanSd(
    seeds!.map((r) => r.test.bleu),
    formatFixed2,
  );
  return plain(`${text} (${seeds!.length} seeds)`);
}

/** Cased BLEU (sacreBLEU's default, the headline for models that keep case) beside the lower-cased figure. */
function casedBleuTable(report: Report): Table | undefined {
  // Reports written before cased BLEU was recorded have no such column to show.
  const runs = report.runs.map((r, i) => ({ r, i })).filter(({ r }) => r.test.bleuCased !== undefined);
  if (runs.length === 0) return undefined;
  return {
    id: 'bleu-cased',
    title: `Test BLEU, cased and lower-cased, beam ${report.settings.beam}`,
    note: "sacreBLEU 13a on detokenised output against the raw references: cased (sacreBLEU's default, the headline for subword models, which keep case) and lower-cased (what the paper's numbers and word-level models, whose tokeniser lower-cases, compare with).",
    header: ['run', 'cased', 'lower-cased'],
    numeric: [false, true, true],
    rows: runs.map(({ r, i }) => [
      plain(r.id),
      value(report, i, 'test.bleuCased', formatFixed2),
      value(report, i, 'test.bleu', formatFixed2),
    ]),
  };
}

/** Subword runs: vocabulary usage counted in pieces (the vocabulary table counts words of the text for them). */
function pieceTable(report: Report): Table | undefined {
  const runs = report.runs.map((r, i) => ({ r, i })).filter(({ r }) => r.test.pieces !== undefined);
  if (runs.length === 0) return undefined;
  return {
    id: 'pieces',
    title: 'Subword runs: vocabulary usage in pieces',
    note: `For subword runs the vocabulary table counts words of the detokenised text (13a) against word counts of the training targets; this one counts pieces against the pieces' training counts (rare: fewer than ${report.settings.rareThreshold}).`,
    header: ['run', 'distinct pieces', 'references', 'rare-piece rate', 'references', 'pieces produced'],
    numeric: [false, true, true, true, true, true],
    rows: runs.map(({ r, i }) => [
      plain(r.id),
      value(report, i, 'test.pieces.vocabUsage', formatCount),
      value(report, i, 'test.pieces.refVocabUsage', formatCount),
      value(report, i, 'test.pieces.rareRate', formatPercent),
      value(report, i, 'test.pieces.refRareRate', formatPercent),
      value(report, i, 'test.pieces.words', formatCount),
    ]),
  };
}

/** chrF and chrF++ beside Table 2: one row per head, two columns per language pair. */
function chrfTable(report: Report): Table {
  const pairs = unique(report.runs.map(pairLabel));
  const heads = unique(report.runs.map((r) => r.head));
  return {
    id: 'chrf',
    title: `Test chrF and chrF++, beam ${report.settings.beam}`,
    note: 'sacreBLEU chrF2 (character 6-grams) and chrF2++ (plus word bigrams) on the same lower-cased output as the BLEU above.',
    header: ['head', ...pairs.flatMap((pair) => [`${pair} chrF2`, `${pair} chrF2++`])],
    numeric: [false, ...pairs.flatMap(() => [true, true])],
    rows: heads.map((head) => [
      plain(head),
      ...pairs.flatMap((pair) => {
        const i = report.runs.findIndex((r) => r.head === head && pairLabel(r) === pair);
        return i < 0
          ? [plain(MISSING), plain(MISSING)]
          : [value(report, i, 'test.chrf', formatFixed2), value(report, i, 'test.chrfpp', formatFixed2)];
      }),
    ]),
  };
}

/** The paper's Table 3: parameters and the decrease in learnable ones against `learned`. */
function paramsTable(report: Report): Table {
  return {
    id: 'params',
    title: 'Parameters',
    note: "The layout of the paper's Table 3. Frozen parameters get no gradient; generated ones are frozen parameters the ONNX graph rebuilds from a seed or structure instead of storing. The decrease is in learnable parameters against the `learned` run of the same architecture, preset and language pair.",
    header: ['run', 'pair', 'head', 'learnable', 'frozen', 'generated', 'decrease vs learned'],
    numeric: [false, false, false, true, true, true, true],
    rows: report.runs.map((r, i) => [
      plain(r.id),
      plain(pairLabel(r)),
      plain(r.head),
      value(report, i, 'params.learnable', formatCount),
      value(report, i, 'params.frozen', formatCount),
      value(report, i, 'params.generated', formatCount),
      r.head === 'learned' ? plain('baseline') : value(report, i, 'learnableDecrease', formatPercent),
    ]),
  };
}

function filesTable(report: Report): Table {
  const precisions = ['fp32', 'fp16', 'int8'] as const;
  return {
    id: 'files',
    title: 'ONNX files',
    note: 'Encoder and decoder together. fp16 and int8 are the files `frost export --precision` writes (the same pass over the float32 graphs). Session creation: median of 3 onnxruntime-node sessions per graph, both graphs summed.',
    header: [
      'run',
      ...precisions.flatMap((p) => [`${p} bytes`, `${p} gzip`]),
      ...precisions.map((p) => `${p} session`),
    ],
    numeric: [false, ...precisions.flatMap(() => [true, true]), ...precisions.map(() => true)],
    rows: report.runs.map((r, i) => [
      plain(r.id),
      ...precisions.flatMap((p) => [
        value(report, i, `onnx.${p}.bytes`, formatBytes),
        value(report, i, `onnx.${p}.gzipBytes`, formatBytes),
      ]),
      ...precisions.map((p) => value(report, i, `onnx.${p}.sessionCreateMs`, formatMs)),
    ]),
  };
}

function latencyTable(report: Report): Table {
  const apart = timedApart(report.runs.map((r) => r.latency.timedAt));
  return {
    id: 'latency',
    title: 'Decode latency',
    note: `fp32 model, onnxruntime-node with one intra-op thread, beam ${report.settings.beam}. Batch 1: median over single test sentences; batch 64: median over batches of 64 test sentences. Load: the machine's 1-minute load average when the run was timed (${report.machine.cores} cores); runs timed under different load are not comparable.${apart ? " Timed: when the run was timed (UTC); rows a grid took from an earlier session's report keep that session's timing, on its machine, so compare latency only among rows timed together." : ''}`,
    header: ['run', 'batch 1', 'batch 64', 'test BLEU', 'load', ...(apart ? ['timed'] : [])],
    numeric: [false, true, true, true, true, ...(apart ? [false] : [])],
    rows: report.runs.map((r, i) => [
      plain(r.id),
      value(report, i, 'latency.batch1Ms', formatMs),
      value(report, i, 'latency.batch64Ms', formatMs),
      value(report, i, 'test.bleu', formatFixed2),
      value(report, i, 'latency.loadAverage', formatFixed2),
      ...(apart ? [plain(formatTimedAt(r.latency.timedAt))] : []),
    ]),
  };
}

function vocabTable(report: Report): Table {
  return {
    id: 'vocabulary',
    title: 'Vocabulary usage on the test set',
    note: `Distinct target words in the translations (specials and <unk> excluded) and the share of produced words that occur fewer than ${report.settings.rareThreshold} times in the training targets. The references' values, tokenised as in training, show what a perfect output would have. Subword runs count words of the detokenised text (13a) against word counts of the training targets; their pieces have a table of their own.`,
    header: ['run', 'distinct words', 'references', 'rare-word rate', 'references', 'words produced'],
    numeric: [false, true, true, true, true, true],
    rows: report.runs.map((r, i) => [
      plain(r.id),
      value(report, i, 'test.vocabUsage', formatCount),
      value(report, i, 'test.refVocabUsage', formatCount),
      value(report, i, 'test.rareRate', formatPercent),
      value(report, i, 'test.refRareRate', formatPercent),
      value(report, i, 'test.words', formatCount),
    ]),
  };
}

function matrixTable(report: Report): Table {
  return {
    id: 'matrix',
    title: 'Target-vector norm against training frequency',
    note: "Spearman ρ of ‖w_j‖ and the training frequency of word j over the whole target vocabulary (the paper's Figure 2 found 0.76–0.93 for learned output matrices). Frozen heads are the control; where every norm is equal by construction there is no correlation to compute.",
    header: ['run', 'head', 'target vectors', 'words', 'Spearman ρ'],
    numeric: [false, false, false, true, true],
    rows: report.runs.map((r, i) =>
      r.matrix
        ? [
            plain(r.id),
            plain(r.head),
            plain(r.matrix.kind),
            value(report, i, 'matrix.words', formatCount),
            r.matrix.spearman === null ? plain('all norms equal') : value(report, i, 'matrix.spearman', formatFixed3),
          ]
        : [plain(r.id), plain(r.head), plain(r.matrixNote ?? 'not analysed'), plain(MISSING), plain(MISSING)],
    ),
  };
}

/** Cosine similarity of word pairs, one table per target language (the pairs are language-specific). */
function pairTables(report: Report): Table[] {
  return unique(report.runs.map((r) => r.tgt)).flatMap((lang) => {
    const runs = report.runs
      .map((r, i) => ({ r, i }))
      .filter(({ r }) => r.tgt === lang && r.matrix && r.matrix.pairs.length > 0);
    if (runs.length === 0) return [];
    const pairs = runs[0]!.r.matrix!.pairs;
    return [
      {
        id: `pairs-${lang}`,
        title: `Cosine similarity of word pairs (target ${lang})`,
        note: 'Related pairs first, then control pairs (marked ×). A learned matrix should put related words closer than controls; random frozen vectors are all near 0. A dash: a word is not in the vocabulary.',
        header: ['run', 'target vectors', ...pairs.map((p) => `${p.related ? '' : '× '}${p.a}/${p.b}`)],
        numeric: [false, false, ...pairs.map(() => true)],
        rows: runs.map(({ r, i }) => [
          plain(r.id),
          plain(r.matrix!.kind),
          ...pairs.map((_, k) => value(report, i, `matrix.pairs.${k}.cosine`, formatFixed3)),
        ]),
      },
    ];
  });
}

/**
 * The budgets a run trained under, in words ('2,400 updates', '20 epochs', '60.0 min'). A cell with one budget
 * names its report.json value; reports from before epoch caps and update budgets were kept show minutes only.
 */
function budgetCell(report: Report, i: number): Cell {
  const t = report.runs[i]!.training;
  const budgets = [
    { value: t.budgetUpdates, key: 'budgetUpdates', unit: 'updates' },
    { value: t.budgetEpochs, key: 'budgetEpochs', unit: 'epochs' },
    { value: t.budgetMinutes, key: 'budgetMinutes', unit: 'min' },
  ].filter((b) => typeof b.value === 'number');
  const shown = (b: (typeof budgets)[number]) =>
    `${b.unit === 'min' ? formatFixed1(b.value) : formatCount(b.value)} ${b.unit}`;
  if (budgets.length === 0) return plain(MISSING);
  if (budgets.length > 1) return plain(budgets.map(shown).join(', '));
  return { text: shown(budgets[0]!), path: `runs.${i}.training.${budgets[0]!.key}` };
}

const CONVERGENCE_WORDS: Record<Convergence, string> = {
  'stopping rule': 'yes, by the stopping rule',
  flat: 'yes, flat at its budget',
  gaining: 'no, still gaining',
  unknown: MISSING,
};

function trainingTable(report: Report): Table {
  const rules = unique(report.runs.flatMap((r) => (r.training.stoppingRule ? [r.training.stoppingRule] : [])));
  // Reports from before validation curves were kept have nothing to show in the convergence columns.
  const curves = report.runs.some((r) => r.training.valBleuCurve !== undefined);
  const gainHeader = `gain, last ${CONVERGENCE_WINDOW} epochs`;
  const convergenceNote = curves
    ? ` The gain is the best validation BLEU of a run's last ${CONVERGENCE_WINDOW} epochs minus its best before them (a dash: fewer than ${CONVERGENCE_WINDOW + 1} validated epochs). A run converged when the stopping rule stopped it, or when it stopped at its epoch cap, update or time budget having gained less than ${CONVERGENCE_MARGIN} BLEU (the claim's margin) in those epochs.`
    : '';
  return {
    id: 'training',
    title: 'Training',
    note: `From the last checkpoint; minutes are wall-clock training time, validation included, summed over resumes. The exported (and evaluated) checkpoint is the one with the best validation BLEU (greedy).${rules.length > 0 ? ` Schedule and stopping rule: ${rules.join('; ')}.` : ''}${convergenceNote}`,
    header: [
      'run',
      'epochs',
      'steps',
      'minutes',
      'budget',
      'best val BLEU',
      ...(curves ? [gainHeader, 'converged'] : []),
      'exported step',
      'stopped because',
    ],
    numeric: [false, true, true, true, true, true, ...(curves ? [true, false] : []), true, false],
    rows: report.runs.map((r, i) => [
      plain(r.id),
      value(report, i, 'training.epochs', formatCount),
      value(report, i, 'training.steps', formatCount),
      value(report, i, 'training.minutes', formatFixed1),
      budgetCell(report, i),
      value(report, i, 'training.bestValBleu', formatFixed2),
      ...(curves
        ? [
            r.training.lastGain === undefined ? plain(MISSING) : value(report, i, 'training.lastGain', formatSigned2),
            plain(CONVERGENCE_WORDS[convergenceOf(r.training)]),
          ]
        : []),
      value(report, i, 'checkpoint.step', formatCount),
      plain(r.training.stopReason ?? MISSING),
    ]),
  };
}

/** Every table, in reading order. */
export function reportTables(report: Report): Table[] {
  const pieces = pieceTable(report);
  const cased = casedBleuTable(report);
  return [
    ...[bleuTable(report), ...(cased ? [cased] : []), chrfTable(report), paramsTable(report), filesTable(report)],
    ...[
      latencyTable(report),
      vocabTable(report),
      ...(pieces ? [pieces] : []),
      matrixTable(report),
      ...pairTables(report),
    ],
    trainingTable(report),
  ];
}
