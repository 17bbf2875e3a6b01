/**
 * `frost inspect`: what an exported model is made of. Reads the card and the graph files, and
 * reports parameters, file sizes, bytes per component/scope/element type, session-creation time,
 * the fp16/int8 check, and the graphs' interfaces. Cards written before the size breakdown existed
 * still inspect: the breakdown is then computed from the graph files (without timing).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ModelCard } from '../core/runtime/model-card.ts';
import { readModelCard } from '../core/runtime/load-node.ts';
import { type GraphValueInfo, readGraphInfo } from './inspect-graph.ts';
import { formatBytes, formatCount, formatShare, formatTable } from './inspect-table.ts';
import { COMPONENTS, type SizeReport, sizeReport } from './size-report.ts';

/** One graph's interface. */
export interface GraphInterface {
  opset: number;
  nodes: number;
  inputs: GraphValueInfo[];
  outputs: GraphValueInfo[];
}

/** Everything `frost inspect` shows (and prints with `--json`). */
export interface InspectReport {
  dir: string;
  name: string;
  arch: string;
  preset: string;
  head: string;
  /** A compact output layer's rows and the vocabulary it widens to (the card's `head.compactOutput`). */
  compactOutput?: { rows: number; vocabulary: number };
  precision: ModelCard['precision'];
  params: ModelCard['params'];
  files: ModelCard['files'];
  size: SizeReport;
  /** 'card' when the breakdown was recorded at export, 'graphs' when computed now from the files. */
  sizeSource: 'card' | 'graphs';
  precisionCheck?: ModelCard['precisionCheck'];
  metrics: ModelCard['metrics'];
  graphs: Record<string, GraphInterface>;
}

/**
 * Builds the report of the model in `dir`.
 * @throws Error naming the card or graph file that is missing or invalid
 */
export async function inspectModel(dir: string): Promise<InspectReport> {
  const card = await readModelCard(dir);
  const files: Record<string, Uint8Array> = {};
  for (const role of ['encoder', 'decoder'] as const) {
    const file = card.graphs[role].file;
    try {
      files[file] = await readFile(join(dir, file));
    } catch (err) {
      throw new Error(`${join(dir, file)}: cannot read the ${role} graph (${(err as Error).message})`, { cause: err });
    }
  }
  const graphs: Record<string, GraphInterface> = {};
  for (const [file, bytes] of Object.entries(files)) {
    const { opset, nodes, inputs, outputs } = readGraphInfo(bytes);
    graphs[file] = { opset, nodes, inputs, outputs };
  }
  return {
    dir,
    name: card.name,
    arch: card.arch,
    preset: card.preset,
    head: card.head.name,
    ...compactOutputOf(card),
    precision: card.precision,
    params: card.params,
    files: card.files,
    size: card.size ?? sizeReport(files),
    sizeSource: card.size ? 'card' : 'graphs',
    ...(card.precisionCheck ? { precisionCheck: card.precisionCheck } : {}),
    metrics: card.metrics,
    graphs,
  };
}

function compactOutputOf(card: ModelCard): Pick<InspectReport, 'compactOutput'> {
  const c = card.head.compactOutput as { rows?: unknown; vocabulary?: unknown } | undefined;
  return typeof c?.rows === 'number' && typeof c.vocabulary === 'number'
    ? { compactOutput: { rows: c.rows, vocabulary: c.vocabulary } }
    : {};
}

function dims(v: GraphValueInfo): string {
  return `[${v.dims.map((d) => d ?? '?').join(', ')}]`;
}

/** The report as readable text: a few small tables. */
export function formatInspect(r: InspectReport): string {
  const out: string[] = [];
  const compact = r.compactOutput
    ? ` (compact output layer: ${formatCount(r.compactOutput.rows)} of ${formatCount(r.compactOutput.vocabulary)} targets scored)`
    : '';
  out.push(`${r.name}: ${r.arch} ${r.preset}, head ${r.head}${compact}, weights stored as ${r.precision}`, '');

  const p = r.params;
  out.push(
    ...formatTable([
      ['parameters', 'count'],
      ['learnable', formatCount(p.learnable)],
      ['frozen', formatCount(p.frozen)],
      ['  regenerated in-graph', formatCount(p.generated)],
    ]),
    '',
  );

  const fileNames = Object.keys(r.files);
  const timing = r.size.sessionCreateMs;
  const total = (f: (x: { bytes: number; gzipBytes?: number }) => number | undefined) =>
    fileNames.reduce((sum, n) => sum + (f(r.files[n]!) ?? 0), 0);
  out.push(
    ...formatTable([
      ['file', 'bytes', 'size', 'gzip', 'session create'],
      ...fileNames.map((n) => {
        const f = r.files[n]!;
        const ms = timing?.[n];
        return [
          n,
          formatCount(f.bytes),
          formatBytes(f.bytes),
          f.gzipBytes === undefined ? '-' : formatBytes(f.gzipBytes),
          ms === undefined ? '-' : `${ms.toFixed(1)} ms`,
        ];
      }),
      [
        'total',
        formatCount(total((f) => f.bytes)),
        formatBytes(total((f) => f.bytes)),
        formatBytes(total((f) => f.gzipBytes)),
        timing
          ? `${Object.values(timing)
              .reduce((a, b) => a + b, 0)
              .toFixed(1)} ms`
          : '-',
      ],
    ]),
  );
  if (!timing) out.push('(session-creation time is measured at export; this card predates it)');
  out.push('');

  const files = Object.keys(r.size.byFile);
  const weightTotal = Object.values(r.size.components).reduce((a, b) => a + b, 0);
  out.push(
    ...formatTable([
      ['component', ...files, 'total', 'share'],
      ...COMPONENTS.filter((c) => (r.size.components[c] ?? 0) > 0).map((c) => [
        c,
        ...files.map((f) => formatBytes(r.size.byFile[f]![c] ?? 0)),
        formatBytes(r.size.components[c] ?? 0),
        formatShare(r.size.components[c] ?? 0, weightTotal),
      ]),
      [
        'total',
        ...files.map((f) => formatBytes(Object.values(r.size.byFile[f]!).reduce((a, b) => a + b, 0))),
        formatBytes(weightTotal),
        '',
      ],
    ]),
    `(initializer bytes${r.sizeSource === 'graphs' ? ', computed from the graph files' : ''}; the rest of a file is graph structure)`,
    '',
  );

  const scopes = Object.entries(r.size.scopes).sort((a, b) => b[1] - a[1]);
  out.push(
    ...formatTable([
      ['scope', 'bytes', 'share'],
      ...scopes.map(([s, b]) => [s, formatBytes(b), formatShare(b, weightTotal)]),
    ]),
    '',
  );
  const dtypes = Object.entries(r.size.dtypes).sort((a, b) => b[1] - a[1]);
  out.push(
    ...formatTable([
      ['stored as', 'bytes', 'share'],
      ...dtypes.map(([t, b]) => [t, formatBytes(b), formatShare(b, weightTotal)]),
    ]),
    '',
  );

  const pc = r.precisionCheck;
  if (pc) {
    const bleu =
      pc.bleu === undefined || pc.bleuFp32 === undefined || pc.bleuDelta === undefined
        ? 'not measured (the corpus was not at hand at export)'
        : `${pc.bleuFp32.toFixed(2)} (fp32) -> ${pc.bleu.toFixed(2)} (${pc.precision}), change ${pc.bleuDelta >= 0 ? '+' : ''}${pc.bleuDelta.toFixed(2)}`;
    out.push(
      `precision check against fp32 (greedy, onnxruntime, ${pc.sentences} validation sentences):`,
      `  BLEU       ${bleu}`,
      `  size       ${formatBytes(pc.bytesFp32)} -> ${formatBytes(pc.bytes)} (${formatShare(pc.bytes, pc.bytesFp32)}), ${pc.convertedWeights} weights converted`,
      `  log-probs  max |change| vs tfjs ${pc.maxAbsLogProbDiff.toExponential(2)}`,
      '',
    );
  }

  for (const [file, g] of Object.entries(r.graphs)) {
    out.push(`${file} (opset ${g.opset}, ${g.nodes} nodes)`);
    out.push(
      ...formatTable(
        [
          ['', 'name', 'type', 'shape'],
          ...g.inputs.map((v) => ['in', v.name, v.elemType, dims(v)]),
          ...g.outputs.map((v) => ['out', v.name, v.elemType, dims(v)]),
        ],
        ['left', 'left', 'left', 'left'],
      ).map((l) => `  ${l}`),
      '',
    );
  }
  return `${out.join('\n').trimEnd()}\n`;
}
