/**
 * Decoding speed of frost's runtime (in-process, onnxruntime-node) against other engines decoding the same model
 * (bench/decode-peers.ts), measured side by side in one run:
 *
 *   npm run bench:decode                                   # rnn-attn: 3 heads × fp32/int8/int8-compute, ~10 min
 *   npm run bench:decode -- --heads learned --precisions fp32 --rounds 3
 *   npm run bench:decode -- --heads learned,fixed-l2 --precisions fp32 --modes 'greedy b1,greedy b64' --no-http
 *   npm run bench:decode -- --write-models DIR --heads learned,fixed-l2 --precisions fp32   # for bench:web
 *   npm run bench:decode -- --modes 'greedy b64,beam5 b16' --compare-whole-rows --no-http  # top-k vs whole-row steps
 *   npm run bench:decode -- --arch transformer --len 20 --src-len 20 --rounds 2 --no-http  # against CTranslate2
 *   npm run bench:decode -- --opus-mt-shape --precisions fp32,int8-compute --len 20 --src-len 20 --no-http
 *   npm run bench:decode -- --marian ~/opus-mt-de-en     # an opus-mt folder, imported; --run RUN: any frost run
 *
 * Both sides decode the same source ids (lengths 8-20, like Multi30k, or `--src-len` each) with the same search
 * and are forced to the same output length (`--len` tokens, then </s>), so they run the same number of decoder
 * steps on the same rows: greedy at batch 1 and 64, beam 5 at batch 1 and 16. The models are `<arch> small`
 * built from initialisation (bench/decode-model.ts) on Multi30k-sized vocabularies, or one joint vocabulary of
 * 8,000 for the Transformer (its recipe shares the embeddings): anyone can rerun this without a trained model.
 * Each round times frost then the peers (then the other way round), so all share the machine's load; the table
 * gives medians over rounds and the median of the rounds' peer / frost ratios (above 1: frost is faster).
 *
 * The peers, per architecture (a peer that cannot start is skipped with the reason printed):
 * - rnn-attn: PyTorch (bench/peer/rnn_attn_decode.py), the same architecture with its own seeded weights; its int8
 *   is PyTorch's dynamic quantisation.
 * - transformer: PyTorch (bench/peer/transformer_decode.py: fairseq-style incremental decoding with cached keys and
 *   values, dynamic int8 on its Linear layers) and CTranslate2 (bench/peer/ctranslate2_decode.py, needs the
 *   `ctranslate2` Python module; FROST_CT2_LIB names the folder of a libctranslate2.so built from source). Both
 *   decode frost's own weights (the bench writes them beside the export, moved off their constant initial biases
 *   and layer norms by seeded noise), and before any timing each must produce frost's tokens on a few sentences,
 *   greedy and beam 5, in fp32 (bench/decode-check.ts). frost's int8 and int8-compute are timed against
 *   CTranslate2's int8 compute types (int8, int8_float32, the faster of the two, named in the peer column).
 *
 * A run instead (bench/decode-run.ts): `--run RUN` times a frost run folder of the architecture, trained or imported
 * (`frost import`), exported per precision as `frost export` exports it, with the run's own head and vocabulary;
 * `--marian DIR` imports a Hugging Face Marian folder (an opus-mt model) and times that; `--opus-mt-shape` writes a
 * random Marian folder of opus-mt-de-en's shape (6+6 layers, d 512, 8 heads, ff 2048, vocabulary 58,101, swish) and
 * times its import: the model users deploy, at its size, without its weights. The peers decode the run's
 * checkpoint.
 *
 * Precisions: fp32 against the peer's float32; `int8` (weight-only, computes in float32) and `int8-compute`
 * (integer MatMuls) against the peer's int8.
 *
 * Last, the HTTP overhead at c=1: the same texts translated one at a time in-process and through
 * `frost serve`'s /v1/translate from a client in its own process (interleaved), server p50 minus in-process p50
 * (bench/http-latency.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { SeededRandom } from '../core/random.ts';
import { multi30kDir } from '../train/data/paths.ts';
import { RunFolder } from '../train/run-folder.ts';
import { loadModelDir } from '../core/runtime/load-node.ts';
import { NODE_SESSION_OPTIONS, nodeRuntimeVersion } from '../core/runtime/ort-node.ts';
import type { Seq2SeqRuntime } from '../core/runtime/seq2seq.ts';
import { MAX_PARITY_TOLERANCE, PARITY_TOLERANCE } from '../export/parity.ts';
import { PRECISIONS, type Precision } from '../export/precision.ts';
import { archHelp, archsReading, DEFAULT_BENCH_ARCH, jointByDefault, pickArchs } from './archs.ts';
import { frostHypotheses, hypothesisMismatches, type Hypotheses } from './decode-check.ts';
import { DEFAULT_VOCAB, JOINT_VOCAB, writeBenchModel, type BenchModel } from './decode-model.ts';
import { importMarianRun, runShape, writeOpusMtShape, writeRunModel } from './decode-run.ts';
import { DecodePeer, decodePeers } from './decode-peers.ts';
import {
  chunks,
  compareWholeRows,
  frostDecode as decodeChunks,
  median,
  selectModes,
  sourceIds,
} from './whole-rows-compare.ts';
import { formatHttpLatency, measureHttpLatency } from './http-latency.ts';

const USAGE = `
npm run bench:decode [-- --arch rnn-attn] [--heads learned,fixed-l2,hadamard] [--precisions fp32,int8,int8-compute]
                     [--modes 'greedy b1,greedy b64,beam5 b1,beam5 b16'] [--len 14] [--src-len N] [--rounds 3]
                     [--threads 1] [--check-sentences 4] [--python /usr/bin/python3]
                     [--compare-whole-rows] [--whole-rows] [--no-http | --http-only] [--write-models DIR]
                     [--run RUN | --marian HF_DIR | --opus-mt-shape] [--parity-tolerance 1e-4] [--ct2 best|default]`;

const { values: args } = parseArgs({
  options: {
    /** The architecture (a translation one of the registry); its peers are bench/decode-peers.ts's. */
    arch: { type: 'string' },
    /** Default: rnn-attn's three heads of the paper; `learned` for the others (the one CTranslate2 maps). */
    heads: { type: 'string' },
    precisions: { type: 'string', default: 'fp32,int8,int8-compute' },
    /** Output tokens per sentence before the forced </s> (Multi30k's German references average ~12-13 words). */
    len: { type: 'string', default: '14' },
    /** Every source this many tokens long; default: lengths 8-20, like Multi30k. */
    'src-len': { type: 'string' },
    rounds: { type: 'string', default: '3' },
    /**
     * onnxruntime intra-op threads per session, and the peers' (torch.set_num_threads, CTranslate2's
     * intra_threads). 1 by default: on a shared 2-core machine a second intra-op thread made frost's steps
     * 2.5-5× slower (docs/decoding-speed.md).
     */
    threads: { type: 'string', default: '1' },
    /** Which of the modes to time (names as in the table, comma-separated), e.g. 'greedy b1,greedy b64'. */
    modes: { type: 'string' },
    /** Sentences both engines decode, greedy and beam 5, before a peer on frost's weights is timed. */
    'check-sentences': { type: 'string', default: '4' },
    'http-sentences': { type: 'string', default: '40' },
    /**
     * Preset of the model the HTTP overhead is measured on. The overhead does not depend on the model, but
     * a small one's decode time varies by several ms on a loaded machine; `tiny` keeps that noise out.
     */
    'http-preset': { type: 'string', default: 'small' },
    /** frost steps fetch and scan whole log-probability rows (the path before the decoder's top-k outputs). */
    'whole-rows': { type: 'boolean', default: false },
    /** Also time frost's top-k steps against whole-row steps, interleaved, per head and precision. */
    'compare-whole-rows': { type: 'boolean', default: false },
    'no-http': { type: 'boolean', default: false },
    'http-only': { type: 'boolean', default: false },
    /** Only write the bench models here (a folder per head and precision), e.g. for `bench:web --models DIR`. */
    'write-models': { type: 'string' },
    /** A frost run folder (trained or imported) to export and time instead of models built from initialisation. */
    run: { type: 'string' },
    /** A Hugging Face Marian folder (an opus-mt model): imported, then timed as `--run`. */
    marian: { type: 'string' },
    /** A random Marian folder of opus-mt-de-en's shape (bench/decode-run.ts), imported, then timed as `--run`. */
    'opus-mt-shape': { type: 'boolean', default: false },
    /**
     * The exports' parity bar for `--run` models (export/parity.ts's, 1e-4, by default); `--opus-mt-shape`'s random
     * weights are large (peaked distributions, so both engines' choices are clear), which puts tfjs and onnxruntime
     * up to ≈ 2e-3 apart where trained weights stay within 1e-4: its default is the largest bar export takes, 1e-2.
     */
    'parity-tolerance': { type: 'string' },
    /**
     * CTranslate2 `best`: as a user tuning it runs it, its widest ISA forced (CT2_FORCE_CPU_ISA=AVX512 on a CPU with
     * AVX-512, where it picks AVX2 on AMD by itself) and OpenBLAS on the CPU's own kernels (the image's
     * OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset for it); `default`: as it configures itself.
     */
    ct2: { type: 'string', default: 'best' },
    python: { type: 'string', default: '/usr/bin/python3' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

const translationArchs = archsReading('tokens');
if (args.help) {
  process.stdout.write(archHelp(USAGE, '--arch', translationArchs));
  process.exit(0);
}
const runSources = [args.run, args.marian, args['opus-mt-shape'] ? 'opus-mt-shape' : undefined].filter(Boolean);
if (runSources.length > 1) throw new RangeError('--run, --marian and --opus-mt-shape: give one');
/** The run's own architecture for `--run` (its config.json), the Transformer for a Marian import. */
const runArch =
  args.run !== undefined
    ? (await RunFolder.open(resolve(args.run))).config.arch
    : runSources.length > 0
      ? 'transformer'
      : undefined;
if (runArch !== undefined && args.arch !== undefined && args.arch !== runArch)
  throw new RangeError(`--arch ${args.arch}: the run is a ${runArch} model`);
if (runArch !== undefined && (args['compare-whole-rows'] || args['write-models'] !== undefined))
  throw new RangeError('--compare-whole-rows and --write-models build models from initialisation: not with a run');
const [arch] = pickArchs(args.arch ?? runArch ?? DEFAULT_BENCH_ARCH, translationArchs) as [string];
if (arch.includes(',')) throw new RangeError('--arch takes one architecture');
const joint = jointByDefault(arch);
const peerSpecs = decodePeers(arch);
/** frost's weights go to the peers that decode them, moved off their constant initial values (decode-model.ts). */
const sameWeights = peerSpecs.some((p) => p.sameWeights);
const srcLen = args['src-len'] === undefined ? undefined : Number(args['src-len']);
const ct2Setting = args.ct2 as 'best' | 'default';
if (!['best', 'default'].includes(ct2Setting)) throw new RangeError(`--ct2 takes best or default; got '${args.ct2}'`);

const selectedModes = () => selectModes(args.modes, ['greedy b1', 'greedy b64', 'beam5 b1', 'beam5 b16']);

/** frostDecode with `--whole-rows` as the default side. */
const frostDecode = (rt: Seq2SeqRuntime, parts: number[][][], beam: number, len: number) =>
  decodeChunks(rt, parts, beam, len, args['whole-rows']);

const writeModel = (root: string, head: string, precision: Precision, preset?: string) =>
  writeBenchModel(root, {
    arch,
    head,
    precision,
    joint,
    ...(preset ? { preset } : {}),
    ...(sameWeights ? { params: true, noise: 0.05 } : {}),
  });

/** A peer with one bench model loaded under `key`. */
interface PeerModel {
  peer: DecodePeer;
  key: string;
}

/** Loads `model` into each peer; a peer that refuses it (a head it cannot map) is left out with the reason printed. */
async function loadInPeers(
  peers: readonly DecodePeer[],
  model: BenchModel,
  head: string,
  precision: Precision,
  threads: number,
): Promise<PeerModel[]> {
  const out: PeerModel[] = [];
  for (const peer of peers) {
    const req = peer.spec.modelRequest(model, head, precision, threads);
    try {
      const reply = await peer.ask(req);
      out.push({ peer, key: req.key });
      process.stdout.write(`${peer.spec.name} ${req.key}: ${JSON.stringify(reply)}\n`);
    } catch (err) {
      process.stdout.write(`${peer.spec.name}: skipped for ${head} ${precision}: ${(err as Error).message}\n`);
    }
  }
  return out;
}

/**
 * frost and a peer on frost's own weights decode the same sentences, greedy and beam 5, to `len` tokens; any
 * difference stops the bench (bench/decode-check.ts).
 */
async function checkSameTokens(rt: Seq2SeqRuntime, pm: PeerModel, model: BenchModel, len: number): Promise<string> {
  const beams = args['opus-mt-shape'] ? 'best' : 'all';
  const count = Number(args['check-sentences']);
  const sources = sourceIds(count, model.card.source!.tokens.length, 7, srcLen);
  const { label } = pm.peer.spec;
  for (const beam of [1, 5]) {
    const frost = await frostHypotheses(rt, sources, beam, len);
    const peer = await pm.peer.ask<{ hypotheses: Hypotheses }>({
      cmd: 'hypotheses',
      key: pm.key,
      sources,
      beam,
      tokens: len,
      specials: model.card.specials,
    });
    const bad = hypothesisMismatches(frost, peer.hypotheses, beam, label, beams);
    if (bad.length > 0)
      throw new Error(
        `frost and ${label} decode different tokens from the same weights (${model.card.name}):\n  ${bad.join('\n  ')}`,
      );
  }
  const compared =
    beams === 'best'
      ? "greedy and beam 5's best (a random deep model's other beams are near-ties)"
      : 'greedy and beam 5';
  return `${label}: the same tokens as frost on ${count} sentences (one batch), ${compared}, ${model.card.name}`;
}

interface Row {
  head: string;
  precision: string;
  mode: string;
  frostMsPerSentence: number;
  /** The peer's name and, when it has several, the setting timed (the fastest); '-' when frost runs alone. */
  peer: string;
  peerMsPerSentence?: number;
  /** Median over rounds of each round's peer / frost time: paired, so load hitting both sides of a round cancels. */
  ratio?: number;
  tokensPerSentence: number;
}

async function timeModel(
  peers: readonly PeerModel[],
  model: BenchModel,
  head: string,
  precision: Precision,
  rounds: number,
  len: number,
  threads: number,
): Promise<Row[]> {
  const rt = await loadModelDir(model.dir, { intraOpNumThreads: threads });
  const specials = model.card.specials;
  const rows: Row[] = [];
  for (const mode of selectedModes()) {
    const parts = chunks(sourceIds(mode.sentences, model.card.source!.tokens.length, 1, srcLen), mode.batch);
    const warm = await frostDecode(rt, parts, mode.beam, len);
    // `steps`: frost's decoder steps per chunk; `tokens`: the same as an output length (len tokens, then </s>).
    const reqs = peers.map((p) => ({
      cmd: 'decode',
      key: p.key,
      chunks: parts,
      steps: warm.steps,
      tokens: len + 1,
      beam: mode.beam,
      specials,
    }));
    for (const [i, p] of peers.entries()) await p.peer.ask(reqs[i]!);
    const frostMs: number[] = [];
    const peerMs: number[][] = peers.map(() => []);
    const byType: Record<string, number[]>[] = peers.map(() => ({}));
    const timePeers = async () => {
      for (const [i, p] of peers.entries()) {
        const reply = await p.peer.ask<{ ms: number; byType?: Record<string, number> }>(reqs[i]!);
        peerMs[i]!.push(reply.ms);
        for (const [type, ms] of Object.entries(reply.byType ?? {})) (byType[i]![type] ??= []).push(ms);
      }
    };
    for (let r = 0; r < rounds; r++) {
      // Alternate who goes first, so a load change within a round does not always hit the same side.
      if (r % 2 === 0) frostMs.push((await frostDecode(rt, parts, mode.beam, len)).ms);
      await timePeers();
      if (r % 2 === 1) frostMs.push((await frostDecode(rt, parts, mode.beam, len)).ms);
    }
    const base = {
      head,
      precision,
      mode: mode.name,
      frostMsPerSentence: median(frostMs) / mode.sentences,
      tokensPerSentence: len + 1,
    };
    const modeRows: Row[] =
      peers.length === 0
        ? [{ ...base, peer: '-' }]
        : peers.map((p, i) => {
            const types = Object.entries(byType[i]!).sort((a, b) => median(a[1]) - median(b[1]));
            return {
              ...base,
              peer:
                types.length > 1 || precision !== 'fp32'
                  ? `${p.peer.spec.name} ${types[0]?.[0] ?? ''}`.trim()
                  : p.peer.spec.name,
              peerMsPerSentence: median(peerMs[i]!) / mode.sentences,
              ratio: median(peerMs[i]!.map((ms, r) => ms / frostMs[r]!)),
            };
          });
    for (const row of modeRows) printRow(row);
    rows.push(...modeRows);
  }
  await rt.release();
  return rows;
}

function printRow(r: Row): void {
  const f = (x: number | undefined) => (x === undefined ? '-' : x.toFixed(2)).padStart(8);
  const ratio = r.ratio === undefined ? '-' : `${r.ratio.toFixed(2)}×`;
  process.stdout.write(
    `| ${r.head.padEnd(9)} | ${r.precision.padEnd(12)} | ${r.mode.padEnd(10)} | ${f(r.frostMsPerSentence)} | ${f(r.frostMsPerSentence / r.tokensPerSentence)} ` +
      `| ${r.peer.padEnd(17)} | ${f(r.peerMsPerSentence)} | ${f(r.peerMsPerSentence === undefined ? undefined : r.peerMsPerSentence / r.tokensPerSentence)} | ${ratio.padStart(6)} |\n`,
  );
}

/**
 * frost int8-compute against frost fp32 on the same head: both runtimes loaded at once and timed
 * alternately on the same chunks, so the ratio is side by side like the PyTorch ones.
 */
async function precisionSpeedup(
  fp32: BenchModel,
  int8: BenchModel,
  head: string,
  rounds: number,
  len: number,
  threads: number,
): Promise<void> {
  const [a, b] = [
    await loadModelDir(fp32.dir, { intraOpNumThreads: threads }),
    await loadModelDir(int8.dir, { intraOpNumThreads: threads }),
  ];
  try {
    for (const mode of selectedModes()) {
      const parts = chunks(sourceIds(mode.sentences, fp32.card.source!.tokens.length, 1, srcLen), mode.batch);
      await frostDecode(a, parts, mode.beam, len);
      await frostDecode(b, parts, mode.beam, len);
      const [fa, fb]: [number[], number[]] = [[], []];
      for (let r = 0; r < rounds; r++) {
        if (r % 2 === 0) fa.push((await frostDecode(a, parts, mode.beam, len)).ms);
        fb.push((await frostDecode(b, parts, mode.beam, len)).ms);
        if (r % 2 === 1) fa.push((await frostDecode(a, parts, mode.beam, len)).ms);
      }
      const f = (x: number) => (x / mode.sentences).toFixed(2).padStart(8);
      process.stdout.write(
        `| ${head.padEnd(9)} | ${mode.name.padEnd(10)} | ${f(median(fa))} | ${f(median(fb))} | ` +
          `${median(fa.map((x, r) => x / fb[r]!))
            .toFixed(2)
            .padStart(5)}× |\n`,
      );
    }
  } finally {
    await a.release();
    await b.release();
  }
}

/**
 * frost before and after the decoder's top-k outputs, timed alternately on the same chunks (same
 * hypotheses; bench/whole-rows-compare.ts): the model exported without them, decoding from whole
 * rows, against the model as exported now, decoding from its top-k outputs.
 */
async function wholeRowsSpeedup(
  model: BenchModel,
  head: string,
  precision: string,
  rounds: number,
  len: number,
  threads: number,
): Promise<void> {
  // "Before": the same model exported without the top-k outputs, so its steps also skip the TopK node.
  const before = await writeBenchModel(join(model.dir, '..', 'whole-rows'), {
    arch,
    joint,
    head,
    precision: precision as Precision,
    topK: false,
  });
  const f = (x: number) => x.toFixed(2).padStart(8);
  await compareWholeRows({
    model,
    before,
    modes: selectedModes(),
    rounds,
    len,
    threads,
    onRow: (row) =>
      process.stdout.write(
        `| ${head.padEnd(9)} | ${precision.padEnd(12)} | ${row.mode.padEnd(10)} | ${f(row.wholeMsPerSentence)} | ` +
          `${f(row.topMsPerSentence)} | ${row.ratio.toFixed(2).padStart(5)}× |\n`,
      ),
  });
}

/**
 * In-process vs HTTP latency of the same texts at c=1, interleaved, with the HTTP client in a process of its own
 * (bench/http-latency.ts; `npm run bench:http` runs the same on its own).
 */
async function httpOverhead(model: BenchModel, threads: number, count: number): Promise<void> {
  const rng = new SeededRandom(2, 'decode-bench-http');
  const texts = Array.from({ length: count }, () => {
    const n = 8 + Math.floor(rng.next() * 13);
    return Array.from({ length: n }, () => model.sourceWords[Math.floor(rng.next() * model.sourceWords.length)]).join(
      ' ',
    );
  });
  const result = await measureHttpLatency({ dir: model.dir, texts, requests: count, threads });
  process.stdout.write(
    `\nHTTP overhead at c=1 (${model.card.name}, ${model.card.preset}, greedy, ${count} texts, 1 decode thread, ` +
      `client in its own process, every way interleaved)\n\n${formatHttpLatency(result)}`,
  );
}

/** The run folder `--run`, `--marian` or `--opus-mt-shape` names, imported under `root` for the latter two. */
async function runToTime(root: string): Promise<string | undefined> {
  if (args.run !== undefined) return resolve(args.run);
  if (args.marian === undefined && !args['opus-mt-shape']) return undefined;
  const data = multi30kDir();
  let from = args.marian === undefined ? undefined : resolve(args.marian);
  if (from === undefined) {
    from = join(root, 'opus-mt-de-en-shape');
    writeOpusMtShape(from, data, args.python!);
  }
  return importMarianRun(from, join(root, 'run'), data);
}

async function main(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'frost-decode-bench-'));
  try {
    await benchAll(root, await runToTime(root));
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

async function benchAll(root: string, run: string | undefined): Promise<void> {
  const runHead = run === undefined ? undefined : (await RunFolder.open(run)).config.head.name;
  if (runHead !== undefined && args.heads !== undefined && args.heads !== runHead)
    throw new RangeError(`--heads ${args.heads}: the run's head is ${runHead}`);
  const heads = (runHead ?? args.heads ?? (arch === 'rnn-attn' ? 'learned,fixed-l2,hadamard' : 'learned')).split(',');
  const precisions = args.precisions!.split(',') as Precision[];
  for (const p of precisions) {
    if (!PRECISIONS.includes(p)) throw new Error(`--precisions: '${p}' is not one of ${PRECISIONS.join(', ')}`);
  }
  if (args['write-models'] !== undefined) {
    for (const head of heads)
      for (const precision of precisions)
        process.stdout.write(`${(await writeModel(resolve(args['write-models']), head, precision)).dir}\n`);
    return;
  }
  const len = Number(args.len);
  const rounds = Number(args.rounds);
  const threads = Number(args.threads);
  const benchModel = (head: string, precision: Precision) =>
    run === undefined
      ? writeModel(root, head, precision)
      : writeRunModel(root, run, {
          precision,
          parityTolerance:
            args['parity-tolerance'] !== undefined
              ? Number(args['parity-tolerance'])
              : args['opus-mt-shape']
                ? MAX_PARITY_TOLERANCE
                : PARITY_TOLERANCE,
        });
  const peers: DecodePeer[] = [];
  try {
    const settings: string[] = [];
    if (!args['http-only']) {
      for (const spec of peerSpecs) {
        const started = await DecodePeer.start(spec, args.python!, threads, { ct2: ct2Setting });
        if ('skipped' in started) {
          settings.push(`${spec.name} (${spec.label}): skipped: ${started.skipped}`);
          continue;
        }
        peers.push(started.peer);
        settings.push(
          `${spec.name} (${spec.label}): ${JSON.stringify(started.settings)}, ${threads} intra-op thread(s)`,
        );
      }
    }
    const models = new Map<string, { model: BenchModel; peers: PeerModel[] }>();
    for (const head of heads) {
      for (const precision of precisions) {
        const model = await benchModel(head, precision);
        models.set(`${head}/${precision}`, { model, peers: [] });
        if (args['http-only']) break;
      }
      if (args['http-only']) break;
    }
    const first = models.values().next().value!.model;
    const what =
      run === undefined
        ? `${arch} small, ${joint ? `joint vocab ${JOINT_VOCAB}` : `vocab ${DEFAULT_VOCAB.src}/${DEFAULT_VOCAB.tgt}`}`
        : `${run}: ${runShape(first)}`;
    const sources = srcLen === undefined ? 'sources of 8-20 tokens' : `sources of ${srcLen} tokens`;
    process.stdout.write(
      `decode speed: ${what}, ${sources}, ${len} tokens + </s> per sentence, ${rounds} rounds\n` +
        `machine: ${cpus().length} × ${cpus()[0]?.model}, load ${loadavg()
          .map((x) => x.toFixed(1))
          .join(' ')}\n` +
        `frost: onnxruntime-node ${nodeRuntimeVersion() ?? '?'} ` +
        `${JSON.stringify({ ...NODE_SESSION_OPTIONS, intraOpNumThreads: threads })}, ` +
        `${args['whole-rows'] ? 'whole-row steps (--whole-rows)' : 'top-k steps'}, precisions ${precisions.join(', ')}\n` +
        settings.map((line) => `${line}\n`).join(''),
    );
    if (!args['http-only'])
      for (const [key, entry] of models) {
        const [head, precision] = key.split('/') as [string, Precision];
        entry.peers = await loadInPeers(peers, entry.model, head, precision, threads);
      }
    // Same tokens first, for every fp32 model a peer decodes with frost's weights.
    for (const [key, { model, peers: loaded }] of models) {
      if (!key.endsWith('/fp32')) continue;
      const checked = loaded.filter((pm) => pm.peer.spec.sameWeights);
      if (checked.length === 0) continue;
      const rt = await loadModelDir(model.dir, { intraOpNumThreads: threads });
      try {
        for (const pm of checked) process.stdout.write(`${await checkSameTokens(rt, pm, model, len)}\n`);
      } finally {
        await rt.release();
      }
    }
    if (!args['http-only']) {
      process.stdout.write(
        '\n| head      | precision    | mode       | frost ms/sent | frost ms/tok | peer              | peer ms/sent | peer ms/tok | peer/frost |\n' +
          '|---|---|---|---:|---:|---|---:|---:|---:|\n',
      );
      for (const [key, { model, peers: loaded }] of models) {
        const [head, precision] = key.split('/') as [string, Precision];
        await timeModel(loaded, model, head, precision, rounds, len, threads);
      }
    }
    if (!args['http-only'] && precisions.includes('fp32') && precisions.includes('int8-compute')) {
      process.stdout.write(
        '\nfrost int8-compute against frost fp32 (interleaved; above 1: int8-compute is faster)\n\n' +
          '| head      | mode       | fp32 ms/sent | int8-compute ms/sent | fp32/int8-compute |\n|---|---|---:|---:|---:|\n',
      );
      for (const head of heads) {
        const [a, b] = [models.get(`${head}/fp32`)!.model, models.get(`${head}/int8-compute`)!.model];
        await precisionSpeedup(a, b, head, rounds, len, threads);
      }
    }
    if (!args['http-only'] && args['compare-whole-rows']) {
      process.stdout.write(
        '\nfrost whole-row steps against top-k steps (interleaved; above 1: top-k steps are faster)\n\n' +
          '| head      | precision    | mode       | whole rows ms/sent | top-k ms/sent | whole/top-k |\n|---|---|---|---:|---:|---:|\n',
      );
      for (const [key, { model }] of models) {
        const [head, precision] = key.split('/') as [string, string];
        await wholeRowsSpeedup(model, head, precision, rounds, len, threads);
      }
    }
    const httpModel = models.values().next().value?.model;
    if (!args['no-http'] && httpModel) {
      const preset = args['http-preset']!;
      const model =
        preset === httpModel.card.preset || run !== undefined
          ? httpModel
          : await writeModel(join(root, 'http'), heads[0]!, precisions[0]!, preset);
      await httpOverhead(model, threads, Number(args['http-sentences']));
    }
  } finally {
    for (const peer of peers) peer.stop();
  }
}

await main();
