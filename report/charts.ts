import { CONVERGENCE_MARGIN, CONVERGENCE_WINDOW } from './convergence.ts';
import { type Report, COMPONENT_KEYS, type ComponentParams } from './schema.ts';
import { lineChart } from './svg/lines.ts';
import { stackedBarChart } from './svg/stacked-bars.ts';
import { scatterChart, type ScatterSeries } from './svg/scatter.ts';
import { pairLabel } from './tables.ts';

/** One chart of the report: its file name stem, a caption, and the SVG. */
export interface Chart {
  id: string;
  caption: string;
  svg: string;
}

const SEGMENT_NAMES: Record<keyof ComponentParams, string> = {
  embeddings: 'embeddings',
  encoder: 'encoder',
  decoder: 'decoder',
  headLearnable: 'output layer, learned',
  headFrozen: 'output layer, frozen (stored)',
  headGenerated: 'output layer, generated (not stored)',
};

const MB = 1e6;

function sizeChart(report: Report): Chart {
  return {
    id: 'size',
    caption:
      'Parameters per component. The output layer is split into what is learned, what is frozen and stored, and what is frozen and rebuilt by the graph (zero bytes in the file).',
    svg: stackedBarChart({
      id: 'size',
      title: 'Parameters by component',
      description: 'Stacked bars of parameter counts per run, by component.',
      categories: report.runs.map((r) => r.id),
      segments: COMPONENT_KEYS.map((key) => ({
        name: SEGMENT_NAMES[key],
        values: report.runs.map((r, i) => ({
          value: r.params.components[key],
          attrs: { 'data-path': `runs.${i}.params.components.${key}` },
        })),
      })),
      y: { label: 'parameters' },
    }),
  };
}

/** One series per head, so a head's runs on different pairs share a colour. */
function byHead(report: Report, y: (i: number) => { value: number; path: string }): ScatterSeries[] {
  const heads = [...new Set(report.runs.map((r) => r.head))];
  // With one pair the colours say everything; with several, each point is labelled with its pair.
  const labelPairs = new Set(report.runs.map(pairLabel)).size > 1;
  return heads.map((head) => ({
    name: head,
    points: report.runs.flatMap((r, i) => {
      if (r.head !== head) return [];
      const v = y(i);
      return [
        {
          x: r.onnx.fp32.bytes / MB,
          y: v.value,
          title: `${r.id} (${pairLabel(r)})`,
          label: labelPairs ? pairLabel(r) : undefined,
          attrs: { 'data-x-path': `runs.${i}.onnx.fp32.bytes`, 'data-x-scale': String(1 / MB), 'data-y-path': v.path },
        },
      ];
    }),
  }));
}

function bleuSizeChart(report: Report): Chart {
  return {
    id: 'bleu-size',
    caption: 'Test BLEU against the size of the float32 ONNX files: up and to the left is better.',
    svg: scatterChart({
      id: 'bleu-size',
      title: 'Test BLEU against model size',
      description: 'Scatter of test BLEU against ONNX file size, one colour per output head.',
      x: { label: 'ONNX files, fp32 (MB)' },
      y: { label: `test BLEU (beam ${report.settings.beam})` },
      series: byHead(report, (i) => ({ value: report.runs[i]!.test.bleu, path: `runs.${i}.test.bleu` })),
    }),
  };
}

function latencySizeChart(report: Report): Chart {
  const batches = [
    { name: 'batch 1', key: 'batch1Ms' },
    { name: 'batch 64', key: 'batch64Ms' },
  ] as const;
  return {
    id: 'latency-size',
    caption: `Decode latency (beam ${report.settings.beam}, one thread) against the size of the float32 ONNX files, on a log scale: one point per run and batch size.`,
    svg: scatterChart({
      id: 'latency-size',
      title: 'Decode latency against model size',
      description: 'Scatter of decode latency at batch 1 and batch 64 against ONNX file size.',
      x: { label: 'ONNX files, fp32 (MB)' },
      y: { label: 'ms per batch', log: true },
      series: batches.map(({ name, key }) => ({
        name,
        points: report.runs.map((r, i) => ({
          x: r.onnx.fp32.bytes / MB,
          y: r.latency[key],
          title: `${r.id}: ${r.latency[key]} ms`,
          attrs: {
            'data-x-path': `runs.${i}.onnx.fp32.bytes`,
            'data-x-scale': String(1 / MB),
            'data-y-path': `runs.${i}.latency.${key}`,
          },
        })),
      })),
    }),
  };
}

function normFrequencyCharts(report: Report): Chart[] {
  return report.runs.flatMap((r) => {
    const m = r.matrix;
    if (!m) return [];
    const rho = m.spearman === null ? 'all norms equal' : `Spearman ρ = ${m.spearman.toFixed(3)}`;
    return [
      {
        id: `norm-frequency-${r.id}`,
        caption: `${r.id}: norm of each word's target vector (${m.kind}) against its training frequency; ${m.points.length} of ${m.words} words, sampled evenly by frequency. ${rho}.`,
        svg: scatterChart({
          id: `norm-frequency-${r.id}`,
          title: `${r.id}: ‖w‖ against frequency (${rho})`,
          description: `Scatter of target-vector norm against training frequency for ${r.id}.`,
          x: { label: 'training frequency', log: true },
          y: { label: '‖w_j‖' },
          series: [{ name: r.head, points: m.points.map((p) => ({ x: p.freq, y: p.norm })) }],
          radius: 2.5,
          height: 300,
        }),
      },
    ];
  });
}

/** Dash patterns by language pair, so runs of one head (one colour) on different pairs stay apart. */
const PAIR_DASHES = [undefined, '6 3', '2 3', '8 3 2 3'] as const;

/**
 * Validation BLEU after each epoch, one line per run with a curve (reports from before curves were kept have
 * none, and no chart): where the lines flatten is what the convergence verdicts read.
 */
function learningCurveChart(report: Report): Chart | null {
  const runs = report.runs.map((r, i) => ({ r, i })).filter(({ r }) => (r.training.valBleuCurve?.length ?? 0) > 0);
  if (runs.length === 0) return null;
  const heads = [...new Set(runs.map(({ r }) => r.head))];
  const pairs = [...new Set(runs.map(({ r }) => pairLabel(r)))];
  return {
    id: 'learning-curves',
    caption:
      `Validation BLEU (greedy, lower-cased) after each epoch, one line per run${pairs.length > 1 ? ': colour by head, dashes by language pair' : ''}. ` +
      `A run stopped at its epoch cap or budget counts as converged when its last ${CONVERGENCE_WINDOW} epochs gained less than ${CONVERGENCE_MARGIN} BLEU on its best before them.`,
    svg: lineChart({
      id: 'learning-curves',
      title: 'Validation BLEU by epoch',
      description: 'Line chart of validation BLEU against epoch, one line per run.',
      x: { label: 'epoch' },
      y: { label: 'validation BLEU (greedy)' },
      series: runs.map(({ r, i }) => ({
        name: r.id,
        color: heads.indexOf(r.head),
        dash: PAIR_DASHES[pairs.indexOf(pairLabel(r)) % PAIR_DASHES.length],
        points: r.training.valBleuCurve!.map((p, k) => ({
          x: p.epoch,
          y: p.bleu,
          title: `${r.id}, epoch ${p.epoch} (step ${p.step}): ${p.bleu.toFixed(2)}`,
          attrs: {
            'data-x-path': `runs.${i}.training.valBleuCurve.${k}.epoch`,
            'data-x-scale': '1',
            'data-y-path': `runs.${i}.training.valBleuCurve.${k}.bleu`,
          },
        })),
      })),
    }),
  };
}

/** Every chart, in reading order. */
export function reportCharts(report: Report): Chart[] {
  const curves = learningCurveChart(report);
  return [
    sizeChart(report),
    bleuSizeChart(report),
    latencySizeChart(report),
    ...normFrequencyCharts(report),
    ...(curves ? [curves] : []),
  ];
}
