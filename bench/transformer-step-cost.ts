/**
 * What one decoder step of an exported Transformer costs deep into a sentence, against the first
 * step: with the key/value cache a step at position 50 computes the same projections as a step at
 * position 1 and only attends over 50 cached positions instead of 1, so its cost should grow little.
 *
 *   npm run bench:transformer-step                                   # small preset, batch 1 and 64
 *   npm run bench:transformer-step -- --preset iwslt --reps 20 --threads 2
 *
 * The model is `transformer <preset>` with the `learned` head built from its seeded initialisation
 * on Multi30k-sized vocabularies (bench/decode-model.ts's), exported in memory the way `frost
 * export` does: anyone can rerun it without a trained model. For each batch size the cache is
 * filled by real steps up to position 50; then steps at position 1 (empty cache) and position 50
 * (49 cached positions) run interleaved `--reps` times, so both share the machine's load, and the
 * table gives medians and their ratio. The reorder columns add what beam search costs on top, at
 * position 50, with a beam-like order (in each group of 5 rows the parents are rows 0, 0, 1, 0, 2:
 * row 0 keeps its cache, the other four take another row's, so most rows move): `gather` copies every cache
 * row into new buffers (row-state.ts's gatherRows, what the runtime did for every reorder), `in
 * place` rewrites the step's own output, copying only rows that move (reorderRowsInPlace, what
 * the runtime does now for a step's output).
 *
 *   npm run bench:transformer-step -- --compare-whole-rows           # greedy and beam 5 at batch 64
 *   npm run bench:transformer-step -- --compare-whole-rows --modes 'greedy b64,beam5 b16' --rounds 9
 *
 * `--compare-whole-rows` times whole sentences instead (bench/whole-rows-compare.ts): the same model
 * written as a model folder twice, once exported without the decoder's top-k outputs (decoding from
 * whole [rows, |V|] rows, as before they existed) and once as exported now (decoding from each row's
 * top 16), both decoding the same 64 sources (lengths 8-20) forced to `--len` tokens then </s>,
 * alternately for `--rounds` rounds. The table gives medians per sentence and per decoder step and
 * the median of the rounds' whole / top-k ratios (above 1: the top-k outputs are faster).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createNodeSession, ort } from '../core/runtime/ort-node.ts';
import { gatherRows, reorderRowsInPlace, type HostTensor } from '../core/runtime/row-state.ts';
import { buildModel, resolveArchConfig } from '../models/index.ts';
import { DEFAULT_VOCAB, writeBenchModel } from './decode-model.ts';
import { compareWholeRows, selectModes } from './whole-rows-compare.ts';

const { values: args } = parseArgs({
  options: {
    preset: { type: 'string', default: 'small' },
    batches: { type: 'string', default: '1,64' },
    position: { type: 'string', default: '50' },
    srcLen: { type: 'string', default: '20' },
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
  },
});

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ids = (n: number, offset: number) =>
  BigInt64Array.from({ length: n }, (_, i) => BigInt(4 + ((i * 37 + offset) % 5000)));

/** Steps at position 1 and `--position`, plain and with a beam-like reorder (the default table). */
async function stepTable(): Promise<void> {
  const model = buildModel(
    'transformer',
    resolveArchConfig('transformer', args.preset),
    { srcVocab: DEFAULT_VOCAB.src, tgtVocab: DEFAULT_VOCAB.tgt },
    { name: 'learned' },
    1,
  );
  const graphs = model.toOnnx();
  const threads = Number(args.threads);
  const encoder = await createNodeSession(graphs.encoder.toBytes(), { intraOpNumThreads: threads });
  const decoder = await createNodeSession(graphs.decoder.toBytes(), { intraOpNumThreads: threads });
  model.params.dispose();
  const position = Number(args.position);
  const reps = Number(args.reps);
  const S = Number(args.srcLen);

  console.log(
    `transformer ${args.preset}, learned head, |V| ${DEFAULT_VOCAB.tgt}, source length ${S}, ${threads} intra-op thread(s); ` +
      `${cpus().length} cores, load ${loadavg()[0]!.toFixed(1)}`,
  );
  console.log(
    '| batch | step at 1 (ms) | step at %d (ms) | ratio | +gather at %d | ratio | +in place at %d | ratio |',
    position,
    position,
    position,
  );
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const B of args.batches.split(',').map(Number)) {
    const memory = await encoder.run({
      src_ids: new ort.Tensor('int64', ids(B * S, B), [B, S]),
      src_lengths: new ort.Tensor(
        'int64',
        BigInt64Array.from({ length: B }, () => BigInt(S)),
        [B],
      ),
    });
    const prev = (t: number) => new ort.Tensor('int64', ids(B, t), [B]);
    const initial = { ...memory };
    let late = { ...memory };
    for (let t = 1; t < position; t++) {
      const out = await decoder.run({ ...late, prev_token: prev(t) });
      const next = { ...late };
      for (const name of model.stateNames) next[name] = out[`next_${name}`]!;
      late = next;
    }
    const parents = [0, 0, 1, 0, 2];
    const order = Int32Array.from({ length: B }, (_, i) => {
      const group = i - (i % 5);
      return Math.min(B - 1, group + parents[i % 5]!);
    });
    type Reorder = 'none' | 'gather' | 'in-place';
    const timeStep = async (feeds: Record<string, ort.Tensor>, reorder: Reorder) => {
      const t0 = performance.now();
      const out = await decoder.run({ ...feeds, prev_token: prev(7) });
      for (const name of model.stateNames) {
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
async function wholeRowsTable(): Promise<void> {
  const threads = Number(args.threads);
  const len = Number(args.len);
  const rounds = Number(args.rounds);
  const modes = selectModes(args.modes, []);
  const root = await mkdtemp(join(tmpdir(), 'frost-transformer-whole-rows-'));
  try {
    const opts = { arch: 'transformer', head: 'learned', preset: args.preset } as const;
    const model = await writeBenchModel(join(root, 'top-k'), opts);
    const before = await writeBenchModel(join(root, 'whole-rows'), { ...opts, topK: false });
    console.log(
      `transformer ${args.preset}, learned head, fp32, |V| ${DEFAULT_VOCAB.tgt}, ${len} tokens + </s> per sentence, ` +
        `${rounds} rounds, ${threads} intra-op thread(s); ${cpus().length} cores, load ${loadavg()[0]!.toFixed(1)}`,
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

await (args['compare-whole-rows'] ? wholeRowsTable() : stepTable());
