/**
 * What one decoder step of an exported translation model costs deep into a sentence, against the first step, in
 * onnxruntime-node, at batch 1 and 64, for every translation architecture of the registry (or `--arch`). A step
 * carries its state (the Transformer's key/value cache, ConvS2S's and LightConv/DynamicConv's last k−1 convolution
 * inputs per layer, the RNN's hidden state), so a step at position 50 should cost about what a step at position 1
 * does (ConvS2S's bar: ≤ 1.5); a decoder that re-ran the prefix would cost ~50× there.
 *
 *   npm run bench:step                                               # every translation architecture, small preset
 *   npm run bench:step -- --arch transformer --preset iwslt --reps 20 --threads 2
 *   npm run bench:step -- --arch convs2s --preset wmt --vocab 8000 --reps 30 --src-len 20
 *   npm run bench:step -- --arch dynamicconv,lightconv --reps 20
 *
 * The model is `<arch> <preset>` with the `--head` output layer built from its seeded initialisation on
 * Multi30k-sized vocabularies (bench/decode-model.ts's; `--vocab N` for N on both sides), exported in memory the way
 * `frost export` does: anyone can rerun it without a trained model, and weights do not change the work a step does.
 * For each batch size the state is filled by real steps up to `--position`; then steps at position 1 (the encoder's
 * state) and at `--position` run interleaved `--reps` times, so both share the machine's load, and the table gives
 * medians and their ratio. The reorder columns add what beam search costs on top, at `--position`, with a beam-like
 * order (in each group of 5 rows the parents are rows 0, 0, 1, 0, 2: row 0 keeps its state, the other four take
 * another row's, so most rows move): `gather` copies every state row into new buffers (row-state.ts's gatherRows,
 * what the runtime did for every reorder), `in place` rewrites the step's own output, copying only rows that move
 * (reorderRowsInPlace, what the runtime does now for a step's output).
 *
 *   npm run bench:step -- --arch transformer --compare-whole-rows    # greedy and beam 5 at batch 64
 *   npm run bench:step -- --arch transformer --compare-whole-rows --modes 'greedy b64,beam5 b16' --rounds 9
 *
 * `--compare-whole-rows` times whole sentences instead (bench/whole-rows-compare.ts): the same model written as a
 * model folder twice, once exported without the decoder's top-k outputs (decoding from whole [rows, |V|] rows, as
 * before they existed) and once as exported now (decoding from each row's top 16), both decoding the same 64 sources
 * (lengths 8-20) forced to `--len` tokens then </s>, alternately for `--rounds` rounds. The table gives medians per
 * sentence and per decoder step and the median of the rounds' whole / top-k ratios (above 1: the top-k outputs are
 * faster).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createNodeSession, ort } from '../core/runtime/ort-node.ts';
import { gatherRows, reorderRowsInPlace, type HostTensor } from '../core/runtime/row-state.ts';
import { buildModel, resolveArchConfig } from '../models/index.ts';
import { archHelp, archsReading, pickArchs } from './archs.ts';
import { DEFAULT_VOCAB, writeBenchModel } from './decode-model.ts';
import { compareWholeRows, selectModes } from './whole-rows-compare.ts';

const USAGE = `
npm run bench:step [-- --arch A,B] [--preset small] [--head learned] [--vocab N] [--batches 1,64] [--position 50]
                   [--src-len 20] [--reps 30] [--threads 1]
npm run bench:step -- --arch A --compare-whole-rows [--modes 'greedy b64,beam5 b64'] [--rounds 5] [--len 14]`;

const { values: args } = parseArgs({
  options: {
    /** Architectures, comma-separated; default: every translation architecture registered. */
    arch: { type: 'string' },
    preset: { type: 'string', default: 'small' },
    head: { type: 'string', default: 'learned' },
    /** Source and target vocabulary size; default: Multi30k-sized (bench/decode-model.ts's DEFAULT_VOCAB). */
    vocab: { type: 'string' },
    batches: { type: 'string', default: '1,64' },
    position: { type: 'string', default: '50' },
    'src-len': { type: 'string', default: '20' },
    reps: { type: 'string', default: '30' },
    /** onnxruntime intra-op threads (1: the serving default on a shared 2-core machine, docs/decoding-speed.md). */
    threads: { type: 'string', default: '1' },
    /** Time sentences decoded from the top-k outputs against whole rows (instead of the step table). */
    'compare-whole-rows': { type: 'boolean', default: false },
    /** --compare-whole-rows: the searches, as bench/whole-rows-compare.ts names them. */
    modes: { type: 'string', default: 'greedy b64,beam5 b64' },
    /** --compare-whole-rows: rounds, each timing both sides. */
    rounds: { type: 'string', default: '5' },
    /** --compare-whole-rows: output tokens per sentence before the forced </s>. */
    len: { type: 'string', default: '14' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

const translationArchs = archsReading('tokens');
if (args.help) {
  process.stdout.write(archHelp(USAGE, '--arch', translationArchs, true));
  process.exit(0);
}
const archs = pickArchs(args.arch, translationArchs);
const vocab =
  args.vocab === undefined ? DEFAULT_VOCAB : ({ src: Number(args.vocab), tgt: Number(args.vocab) } as const);
const threads = Number(args.threads);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ids = (n: number, offset: number) =>
  BigInt64Array.from({ length: n }, (_, i) => BigInt(4 + ((i * 37 + offset) % Math.min(5000, vocab.src - 4))));
const machine = () => `${cpus().length} cores, load ${loadavg()[0]!.toFixed(1)}`;

type Reorder = 'none' | 'gather' | 'in-place';

/** Steps at position 1 and `--position`, plain and with a beam-like reorder (the default table). */
async function stepTable(arch: string): Promise<void> {
  const model = buildModel(
    arch,
    resolveArchConfig(arch, args.preset),
    { srcVocab: vocab.src, tgtVocab: vocab.tgt },
    { name: args.head },
    1,
  );
  const graphs = model.toOnnx();
  const encoder = await createNodeSession(graphs.encoder.toBytes(), { intraOpNumThreads: threads });
  const decoder = await createNodeSession(graphs.decoder.toBytes(), { intraOpNumThreads: threads });
  const stateNames = model.stateNames;
  model.params.dispose();
  const position = Number(args.position);
  const reps = Number(args.reps);
  const S = Number(args['src-len']);

  console.log(
    `\n${arch} ${args.preset}, ${args.head} head, |V| ${vocab.src} / ${vocab.tgt}, source length ${S}, ` +
      `${threads} intra-op thread(s); ${machine()}`,
  );
  console.log(
    `| batch | step at 1 (ms) | step at ${position} (ms) | ratio | +gather at ${position} | ratio | ` +
      `+in place at ${position} | ratio |`,
  );
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const B of args.batches.split(',').map(Number)) {
    const encoded = await encoder.run({
      src_ids: new ort.Tensor('int64', ids(B * S, B), [B, S]),
      src_lengths: new ort.Tensor(
        'int64',
        BigInt64Array.from({ length: B }, () => BigInt(S)),
        [B],
      ),
    });
    // The decoder's inputs the encoder gives (its state at position 1 and the memory it attends over).
    const initial: Record<string, ort.Tensor> = {};
    for (const name of decoder.inputNames) if (encoded[name] !== undefined) initial[name] = encoded[name];
    const prev = (t: number) => new ort.Tensor('int64', ids(B, t), [B]);
    let late = { ...initial };
    for (let t = 1; t < position; t++) {
      const out = await decoder.run({ ...late, prev_token: prev(t) });
      const next = { ...late };
      for (const name of stateNames) next[name] = out[`next_${name}`]!;
      late = next;
    }
    const parents = [0, 0, 1, 0, 2];
    const order = Int32Array.from({ length: B }, (_, i) => {
      const group = i - (i % 5);
      return Math.min(B - 1, group + parents[i % 5]!);
    });
    const timeStep = async (feeds: Record<string, ort.Tensor>, reorder: Reorder) => {
      const t0 = performance.now();
      const out = await decoder.run({ ...feeds, prev_token: prev(7) });
      for (const name of stateNames) {
        const t = out[`next_${name}`] as HostTensor;
        if (reorder === 'gather') gatherRows(ort, t, order);
        else if (reorder === 'in-place') reorderRowsInPlace(ort, t, order);
      }
      return performance.now() - t0;
    };
    const times = { early: [] as number[], late: [] as number[], gather: [] as number[], inPlace: [] as number[] };
    const cases: [number[], Record<string, ort.Tensor>, Reorder][] = [
      [times.early, initial, 'none'],
      [times.late, late, 'none'],
      [times.gather, late, 'gather'],
      [times.inPlace, late, 'in-place'],
    ];
    for (let r = 0; r < reps + 2; r++) {
      // Each round starts with a different case, so none always follows the largest allocation.
      for (let i = 0; i < cases.length; i++) {
        const [into, feeds, reorder] = cases[(r + i) % cases.length]!;
        const ms = await timeStep(feeds, reorder);
        if (r >= 2) into.push(ms); // two warm-up rounds
      }
    }
    const [a, b, c, d] = [median(times.early), median(times.late), median(times.gather), median(times.inPlace)];
    console.log(
      `| ${B} | ${a.toFixed(2)} | ${b.toFixed(2)} | ${(b / a).toFixed(2)} | ${c.toFixed(2)} | ${(c / a).toFixed(2)} | ${d.toFixed(2)} | ${(d / a).toFixed(2)} |`,
    );
  }
  await encoder.release();
  await decoder.release();
}

/** Sentences decoded from the top-k outputs against whole rows, alternately (`--compare-whole-rows`). */
async function wholeRowsTable(arch: string): Promise<void> {
  const len = Number(args.len);
  const rounds = Number(args.rounds);
  const modes = selectModes(args.modes, []);
  const root = await mkdtemp(join(tmpdir(), `frost-${arch}-whole-rows-`));
  try {
    const opts = { arch, head: args.head, preset: args.preset, srcVocab: vocab.src, tgtVocab: vocab.tgt } as const;
    const model = await writeBenchModel(join(root, 'top-k'), opts);
    const before = await writeBenchModel(join(root, 'whole-rows'), { ...opts, topK: false });
    console.log(
      `\n${arch} ${args.preset}, ${args.head} head, fp32, |V| ${vocab.tgt}, ${len} tokens + </s> per sentence, ` +
        `${rounds} rounds, ${threads} intra-op thread(s); ${machine()}`,
    );
    console.log(
      '| mode | whole rows ms/sent | top-k ms/sent | whole rows ms/step | top-k ms/step | whole / top-k |\n' +
        '|---|---:|---:|---:|---:|---:|',
    );
    await compareWholeRows({
      model,
      before,
      modes,
      rounds,
      len,
      threads,
      onRow: (row) => {
        const mode = modes.find((m) => m.name === row.mode)!;
        // A chunk of `batch` sentences takes stepsPerChunk steps.
        const perStep = (msPerSentence: number) => ((msPerSentence * mode.batch) / row.stepsPerChunk).toFixed(2);
        console.log(
          `| ${row.mode} | ${row.wholeMsPerSentence.toFixed(2)} | ${row.topMsPerSentence.toFixed(2)} | ` +
            `${perStep(row.wholeMsPerSentence)} | ${perStep(row.topMsPerSentence)} | ${row.ratio.toFixed(2)}× |`,
        );
      },
    });
    console.log(`load after: ${loadavg()[0]!.toFixed(1)}`);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

for (const arch of archs) await (args['compare-whole-rows'] ? wholeRowsTable(arch) : stepTable(arch));
