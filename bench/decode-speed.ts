/**
 * Decoding speed of frost's runtime (in-process, onnxruntime-node) against a PyTorch peer of the same
 * model (bench/peer/rnn_attn_decode.py), measured side by side in one run:
 *
 *   npm run bench:decode                                   # 3 heads × fp32/int8/int8-compute, ~10 min
 *   npm run bench:decode -- --heads learned --precisions fp32 --rounds 3
 *   npm run bench:decode -- --heads learned,fixed-l2 --precisions fp32 --modes 'greedy b1,greedy b64' --no-http
 *   npm run bench:decode -- --write-models DIR --heads learned,fixed-l2 --precisions fp32   # for bench:web
 *   npm run bench:decode -- --modes 'greedy b64,beam5 b16' --compare-whole-rows --no-http  # top-k vs whole-row steps
 *
 * Both sides decode the same source ids (lengths 8-20, like Multi30k) with the same search and are
 * forced to the same output length (`--len` tokens, then </s>), so they run the same number of
 * decoder steps on the same rows: greedy at batch 1 and 64, beam 5 at batch 1 and 16. The models are
 * rnn-attn `small` built from initialisation on Multi30k-sized vocabularies (bench/decode-model.ts):
 * anyone can rerun this without a trained model. Each round times frost then PyTorch (then the other
 * way round), so both share the machine's load; the table gives medians over rounds and the median
 * of the rounds' PyTorch / frost ratios (above 1: frost is faster).
 *
 * Precisions: fp32 against PyTorch fp32; `int8` (weight-only, computes in float32) and
 * `int8-compute` (integer MatMuls) against PyTorch's dynamic int8 quantisation.
 *
 * Last, the HTTP overhead at c=1: the same texts translated one at a time in-process and through
 * `frost serve`'s /v1/translate from a client in its own process (interleaved), server p50 minus in-process p50
 * (bench/http-latency.ts).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { SeededRandom } from '../core/random.ts';
import { loadModelDir } from '../core/runtime/load-node.ts';
import { NODE_SESSION_OPTIONS } from '../core/runtime/ort-node.ts';
import type { Seq2SeqRuntime } from '../core/runtime/seq2seq.ts';
import { PRECISIONS, type Precision } from '../export/precision.ts';
import { DEFAULT_VOCAB, writeBenchModel, type BenchModel } from './decode-model.ts';
import {
  chunks,
  compareWholeRows,
  frostDecode as decodeChunks,
  median,
  selectModes,
  sourceIds,
} from './whole-rows-compare.ts';
import { formatHttpLatency, measureHttpLatency } from './http-latency.ts';

const ROOT = resolve(import.meta.dirname, '..');

const { values: args } = parseArgs({
  options: {
    heads: { type: 'string', default: 'learned,fixed-l2,hadamard' },
    precisions: { type: 'string', default: 'fp32,int8,int8-compute' },
    /** Output tokens per sentence before the forced </s> (Multi30k's German references average ~12-13 words). */
    len: { type: 'string', default: '14' },
    rounds: { type: 'string', default: '3' },
    /**
     * onnxruntime intra-op threads per session and torch.set_num_threads. 1 by default: on a shared
     * 2-core machine a second intra-op thread made frost's steps 2.5-5× slower (docs/decoding-speed.md).
     */
    threads: { type: 'string', default: '1' },
    /** Which of the modes to time (names as in the table, comma-separated), e.g. 'greedy b1,greedy b64'. */
    modes: { type: 'string' },
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
    python: { type: 'string', default: '/usr/bin/python3' },
  },
});

/** The PyTorch peer as a child process answering one JSON line per request. */
class Peer {
  private readonly lines: AsyncIterator<string>;
  private constructor(private readonly child: ReturnType<typeof spawn>) {
    this.lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  }

  static start(python: string, threads: number): Peer {
    const script = join(ROOT, 'bench', 'peer', 'rnn_attn.py');
    const child = spawn(python, [script, '--decode-server', '--threads', String(threads)], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    return new Peer(child);
  }

  async ask<T>(req: Record<string, unknown>): Promise<T> {
    this.child.stdin!.write(`${JSON.stringify(req)}\n`);
    const next = await this.lines.next();
    if (next.done)
      throw new Error(`the PyTorch peer exited (exit code ${this.child.exitCode}); is python3-torch installed?`);
    const reply = JSON.parse(next.value) as T & { error?: string };
    if (reply.error) throw new Error(`PyTorch peer: ${reply.error}`);
    return reply;
  }

  stop(): void {
    this.child.stdin!.end();
  }
}

const selectedModes = () => selectModes(args.modes, ['greedy b1', 'greedy b64', 'beam5 b1', 'beam5 b16']);

/** frostDecode with `--whole-rows` as the default side. */
const frostDecode = (rt: Seq2SeqRuntime, parts: number[][][], beam: number, len: number) =>
  decodeChunks(rt, parts, beam, len, args['whole-rows']);

interface Row {
  head: string;
  precision: string;
  mode: string;
  frostMsPerSentence: number;
  peerMsPerSentence: number;
  /** Median over rounds of each round's PyTorch / frost time: paired, so load hitting both sides of a round cancels. */
  ratio: number;
  tokensPerSentence: number;
}

async function timeModel(
  peer: Peer,
  model: BenchModel,
  head: string,
  precision: Precision,
  rounds: number,
  len: number,
  threads: number,
): Promise<Row[]> {
  const rt = await loadModelDir(model.dir, { intraOpNumThreads: threads });
  const key = `${head}/${precision === 'fp32' ? 'fp32' : 'int8'}`;
  await peer.ask({
    cmd: 'model',
    key,
    head,
    srcVocab: model.card.source!.tokens.length,
    tgtVocab: model.card.target.tokens.length,
    config: model.archConfig,
    int8: precision !== 'fp32',
  });
  const specials = model.card.specials;
  const rows: Row[] = [];
  for (const mode of selectedModes()) {
    const parts = chunks(sourceIds(mode.sentences, model.card.source!.tokens.length, 1), mode.batch);
    const warm = await frostDecode(rt, parts, mode.beam, len);
    const peerReq = { cmd: 'decode', key, chunks: parts, steps: warm.steps, beam: mode.beam, specials };
    await peer.ask(peerReq);
    const frostMs: number[] = [];
    const peerMs: number[] = [];
    for (let r = 0; r < rounds; r++) {
      // Alternate who goes first, so a load change within a round does not always hit the same side.
      if (r % 2 === 0) frostMs.push((await frostDecode(rt, parts, mode.beam, len)).ms);
      peerMs.push((await peer.ask<{ ms: number }>(peerReq)).ms);
      if (r % 2 === 1) frostMs.push((await frostDecode(rt, parts, mode.beam, len)).ms);
    }
    const row: Row = {
      head,
      precision,
      mode: mode.name,
      frostMsPerSentence: median(frostMs) / mode.sentences,
      peerMsPerSentence: median(peerMs) / mode.sentences,
      ratio: median(peerMs.map((p, r) => p / frostMs[r]!)),
      tokensPerSentence: len + 1,
    };
    rows.push(row);
    printRow(row);
  }
  await rt.release();
  return rows;
}

function printRow(r: Row): void {
  const f = (x: number) => x.toFixed(2).padStart(8);
  process.stdout.write(
    `| ${r.head.padEnd(9)} | ${r.precision.padEnd(12)} | ${r.mode.padEnd(10)} | ${f(r.frostMsPerSentence)} | ${f(r.frostMsPerSentence / r.tokensPerSentence)} ` +
      `| ${f(r.peerMsPerSentence)} | ${f(r.peerMsPerSentence / r.tokensPerSentence)} | ${r.ratio.toFixed(2).padStart(5)}× |\n`,
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
      const parts = chunks(sourceIds(mode.sentences, fp32.card.source!.tokens.length, 1), mode.batch);
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

async function main(): Promise<void> {
  const heads = args.heads!.split(',');
  const precisions = args.precisions!.split(',') as Precision[];
  for (const p of precisions) {
    if (!PRECISIONS.includes(p)) throw new Error(`--precisions: '${p}' is not one of ${PRECISIONS.join(', ')}`);
  }
  if (args['write-models'] !== undefined) {
    for (const head of heads)
      for (const precision of precisions)
        process.stdout.write(`${(await writeBenchModel(resolve(args['write-models']), { head, precision })).dir}\n`);
    return;
  }
  const len = Number(args.len);
  const rounds = Number(args.rounds);
  const threads = Number(args.threads);
  const root = await mkdtemp(join(tmpdir(), 'frost-decode-bench-'));
  const peer = Peer.start(args.python!, threads);
  try {
    const info = await peer.ask<Record<string, unknown>>({
      cmd: 'model',
      key: 'probe',
      head: 'learned',
      srcVocab: 8,
      tgtVocab: 8,
      config: { embedding: 4, hidden: 4, encoderHidden: 2, attention: 4, output: 4, dropout: 0 },
    });
    process.stdout.write(
      `decode speed: rnn-attn small, vocab ${DEFAULT_VOCAB.src}/${DEFAULT_VOCAB.tgt}, ${len} tokens + </s> per sentence, ${rounds} rounds\n` +
        `machine: ${cpus().length} × ${cpus()[0]?.model}, load ${loadavg()
          .map((x) => x.toFixed(1))
          .join(' ')}\n` +
        `onnxruntime-node: ${JSON.stringify({ ...NODE_SESSION_OPTIONS, intraOpNumThreads: threads })}, ` +
        `${args['whole-rows'] ? 'whole-row steps (--whole-rows)' : 'top-k steps'}\n` +
        `pytorch: ${JSON.stringify(info)}\n\n` +
        '| head      | precision    | mode       | frost ms/sent | frost ms/tok | torch ms/sent | torch ms/tok | torch/frost |\n' +
        '|---|---|---|---:|---:|---:|---:|---:|\n',
    );
    let httpModel: BenchModel | undefined;
    const written = new Map<string, BenchModel>();
    for (const head of heads) {
      for (const precision of precisions) {
        if (args['http-only'] && httpModel) continue;
        const model = await writeBenchModel(root, { head, precision });
        written.set(`${head}/${precision}`, model);
        httpModel ??= model;
        if (!args['http-only']) await timeModel(peer, model, head, precision, rounds, len, threads);
      }
    }
    if (!args['http-only'] && precisions.includes('fp32') && precisions.includes('int8-compute')) {
      process.stdout.write(
        '\nfrost int8-compute against frost fp32 (interleaved; above 1: int8-compute is faster)\n\n' +
          '| head      | mode       | fp32 ms/sent | int8-compute ms/sent | fp32/int8-compute |\n|---|---|---:|---:|---:|\n',
      );
      for (const head of heads) {
        const [a, b] = [written.get(`${head}/fp32`)!, written.get(`${head}/int8-compute`)!];
        await precisionSpeedup(a, b, head, rounds, len, threads);
      }
    }
    if (!args['http-only'] && args['compare-whole-rows']) {
      process.stdout.write(
        '\nfrost whole-row steps against top-k steps (interleaved; above 1: top-k steps are faster)\n\n' +
          '| head      | precision    | mode       | whole rows ms/sent | top-k ms/sent | whole/top-k |\n|---|---|---|---:|---:|---:|\n',
      );
      for (const [key, model] of written) {
        const [head, precision] = key.split('/') as [string, string];
        await wholeRowsSpeedup(model, head, precision, rounds, len, threads);
      }
    }
    if (!args['no-http'] && httpModel) {
      const preset = args['http-preset']!;
      const model =
        preset === httpModel.card.preset
          ? httpModel
          : await writeBenchModel(join(root, 'http'), { head: heads[0]!, precision: precisions[0]!, preset });
      await httpOverhead(model, threads, Number(args['http-sentences']));
    }
  } finally {
    peer.stop();
    await rm(root, { recursive: true, force: true });
  }
}

await main();
