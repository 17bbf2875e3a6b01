/**
 * Where a batched decode's time goes, for the bench model of bench:decode (rnn-attn, seeded,
 * Multi30k-sized vocabularies), with onnxruntime-node on 1 intra-op thread:
 *
 *   node --import tsx bench/decode-step-profile.ts --head learned --batch 64 --beam 1
 *   node --import tsx bench/decode-step-profile.ts --head learned --batch 16 --beam 5
 *   node --import tsx bench/decode-step-profile.ts --model artifacts/opus-mt-de-en --batch 64   (an exported model)
 *
 * 1. core/decode's `generate` (forced to --len tokens, as bench:decode does), split into the encoder
 *    run, the time inside the model's step calls, and the rest (search in JS: argmax/top-k,
 *    processors, reorders), with top-k steps and with whole-row steps, interleaved.
 * 2. The decoder step alone (`session.run`, same rows), and onnxruntime's own per-node profile of it
 *    (`enableProfiling`): kernel time per node and step, and the time `run` takes outside kernels
 *    (feeds, output copies into JS).
 * 3. The encoder's per-node profile for the batch.
 */
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { generate } from '../core/decode/generate.ts';
import type { StepModel } from '../core/decode/types.ts';
import { SeededRandom } from '../core/random.ts';
import { loadModelDir, readModelCard } from '../core/runtime/load-node.ts';
import { createNodeSession, ort } from '../core/runtime/ort-node.ts';
import type { DecoderState } from '../core/runtime/row-state.ts';
import type { ModelCard } from '../core/runtime/model-card.ts';
import { Seq2SeqRuntime } from '../core/runtime/seq2seq.ts';
import type { InferenceSession } from 'onnxruntime-common';
import { writeBenchModel } from './decode-model.ts';

const { values: args } = parseArgs({
  options: {
    head: { type: 'string', default: 'learned' },
    preset: { type: 'string', default: 'small' },
    batch: { type: 'string', default: '64' },
    beam: { type: 'string', default: '1' },
    len: { type: 'string', default: '14' },
    rounds: { type: 'string', default: '5' },
    /** An exported model folder to profile instead of the seeded rnn-attn. */
    model: { type: 'string' },
  },
});
const batch = Number(args.batch);
const beam = Number(args.beam);
const len = Number(args.len);
const rounds = Number(args.rounds);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[(xs.length - 1) >> 1]!;
const ms = (x: number) => x.toFixed(2).padStart(7);

interface NodeEvent {
  cat: string;
  name: string;
  dur: number;
  args?: { op_name?: string };
}

/** Kernel µs per node (summed over the profiled runs) and the summed `model_run` µs. */
async function readProfile(file: string): Promise<{ nodes: Map<string, number>; runs: number }> {
  const events = JSON.parse(await readFile(file, 'utf8')) as NodeEvent[];
  const nodes = new Map<string, number>();
  let runs = 0;
  for (const e of events) {
    if (e.cat === 'Session' && e.name === 'model_run') runs += e.dur;
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    const key = `${e.args?.op_name ?? '?'} ${e.name.replace(/_kernel_time$/, '')}`;
    nodes.set(key, (nodes.get(key) ?? 0) + e.dur);
  }
  return { nodes, runs };
}

function printNodes(nodes: Map<string, number>, perRun: number, top = 14): void {
  const total = [...nodes.values()].reduce((a, b) => a + b, 0);
  for (const [k, v] of [...nodes].sort((a, b) => b[1] - a[1]).slice(0, top))
    process.stdout.write(`  ${ms(v / perRun / 1000)} ms  ${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}\n`);
  process.stdout.write(`  ${ms(total / perRun / 1000)} ms  kernels in all\n`);
}

/**
 * 2 and 3 for a decoder with key/value caches (the Transformer's): the step's feeds (caches, their length) are the
 * runtime's to build, so both graphs are profiled through `generate` itself, `rounds` batches.
 */
async function profileThroughGenerate(model: { dir: string; card: ModelCard }, srcs: number[][]): Promise<void> {
  const sessions: InferenceSession[] = [];
  const rt = await Seq2SeqRuntime.create({
    ort,
    card: model.card,
    graphs: (file) => readFile(join(model.dir, file)),
    createSession: async (bytes, role) => {
      const session = await createNodeSession(bytes, { intraOpNumThreads: 1, profileFilePrefix: join(root, role) });
      sessions.push(session);
      return session;
    },
    locate: (file) => join(model.dir, file),
  });
  let steps = 0;
  const counted: StepModel<DecoderState> = {
    ...rt.stepModel,
    stepTop: async (...a) => {
      steps++;
      return rt.stepModel.stepTop!(...a);
    },
  };
  for (let r = 0; r < rounds; r++)
    await generate(counted, await rt.encode(srcs), batch, { beam, minLen: len, maxLen: len });
  for (const session of sessions) await session.endProfiling();
  const files = await readdir(root);
  const profile = async (role: string) =>
    readProfile(
      join(
        root,
        files.find((f) => f.startsWith(role) && f.endsWith('.json'))!,
      ),
    );
  const dec = await profile('decoder');
  process.stdout.write(
    `\ndecoder steps inside generate (${steps} steps over ${rounds} batches): onnxruntime's model_run ` +
      `${(dec.runs / steps / 1000).toFixed(2)} ms a step. Kernels per step:\n`,
  );
  printNodes(dec.nodes, steps);
  const enc = await profile('encoder');
  process.stdout.write(`\nencoder at batch ${batch}, kernels per run:\n`);
  printNodes(enc.nodes, rounds, 6);
  await rt.release();
}

/** 2 and 3: the decoder step alone, fed the encoder's state, and the encoder, each with onnxruntime's profile. */
async function profileStepAlone(model: { dir: string; card: ModelCard }, srcs: number[][]): Promise<void> {
  // 2. the decoder step alone, with onnxruntime's profile.
  // createNodeSession folds a seeded head's constants first, as loadModelDir's sessions do.
  const read = (role: 'encoder' | 'decoder') => readFile(join(model.dir, model.card.graphs[role].file));
  const enc = await createNodeSession(await read('encoder'), {
    intraOpNumThreads: 1,
    profileFilePrefix: join(root, 'encoder'),
  });
  const dec = await createNodeSession(await read('decoder'), {
    intraOpNumThreads: 1,
    profileFilePrefix: join(root, 'decoder'),
  });
  const S = Math.max(...srcs.map((s) => s.length));
  const ids = new BigInt64Array(batch * S);
  srcs.forEach((s, b) => s.forEach((id, j) => (ids[b * S + j] = BigInt(id))));
  const encFeeds = {
    src_ids: new ort.Tensor('int64', ids, [batch, S]),
    src_lengths: new ort.Tensor(
      'int64',
      BigInt64Array.from(srcs, (s) => BigInt(s.length)),
      [batch],
    ),
  };
  const encRuns = 3;
  for (let i = 0; i < encRuns; i++) await enc.run(encFeeds);
  const eo = await enc.run(encFeeds);
  // Beam search runs `beam` rows per input after its first step.
  const rows = batch * beam;
  const expand = (t: ort.Tensor) => {
    const data = t.data as Float32Array;
    const size = data.length / batch;
    const out = new Float32Array(rows * size);
    for (let r = 0; r < rows; r++)
      out.set(data.subarray(Math.floor(r / beam) * size, (Math.floor(r / beam) + 1) * size), r * size);
    return new ort.Tensor('float32', out, [rows, ...t.dims.slice(1)]);
  };
  const feeds: Record<string, ort.Tensor> = {
    prev_token: new ort.Tensor('int64', new BigInt64Array(rows).fill(BigInt(model.card.specials.bos)), [rows]),
  };
  for (const name of [...model.card.graphs.decoder.state, ...model.card.graphs.decoder.memory])
    feeds[name] = expand(eo[name] as ort.Tensor);
  const top = model.card.graphs.decoder.top!;
  const fetchSets: Record<string, string[]> = {
    'whole rows': ['log_probs', 'next_state'],
    'top-k': [top.logProbs, top.tokens, 'next_state'],
  };
  const runs = 20;
  const wall: Record<string, number[]> = {};
  for (let r = 0; r < runs; r++) {
    for (const [name, fetches] of Object.entries(fetchSets)) {
      const t0 = performance.now();
      await dec.run(feeds, fetches);
      (wall[name] ??= []).push(performance.now() - t0);
    }
  }
  await dec.endProfiling();
  const decFile = (await readdir(root)).find((f) => f.startsWith('decoder') && f.endsWith('.json'))!;
  const { nodes, runs: runUs } = await readProfile(join(root, decFile));
  process.stdout.write(
    `\ndecoder step alone at ${rows} rows (${runs} runs of each fetch set, alternating): session.run median ` +
      Object.entries(wall)
        .map(([k, v]) => `${k} ${median(v).toFixed(2)} ms`)
        .join(', ') +
      `; onnxruntime's model_run ${(runUs / (2 * runs) / 1000).toFixed(2)} ms. Kernels per step:\n`,
  );
  printNodes(nodes, 2 * runs);
  await enc.endProfiling();
  const encFile = (await readdir(root)).find((f) => f.startsWith('encoder') && f.endsWith('.json'))!;
  const encProfile = await readProfile(join(root, encFile));
  process.stdout.write(`\nencoder at batch ${batch} (source length ${S}), kernels per run:\n`);
  printNodes(encProfile.nodes, encRuns + 1, 6);
}

const root = await mkdtemp(join(tmpdir(), 'frost-step-profile-'));
try {
  const model =
    args.model === undefined
      ? await writeBenchModel(root, { head: args.head!, preset: args.preset, precision: 'fp32' })
      : { dir: args.model, card: await readModelCard(args.model) };
  const rng = new SeededRandom(1, 'decode-step-profile');
  const srcVocab = model.card.source!.tokens.length;
  const srcs = Array.from({ length: batch }, () =>
    Array.from({ length: 8 + Math.floor(rng.next() * 13) }, () => 4 + Math.floor(rng.next() * (srcVocab - 4))),
  );
  process.stdout.write(
    `${args.model ?? `rnn-attn ${args.preset} ${args.head}`}, batch ${batch}, beam ${beam}, ${len} tokens + </s>, onnxruntime-node 1 thread\n\n`,
  );

  // 1. generate, split by part.
  const rt = await loadModelDir(model.dir, { intraOpNumThreads: 1 });
  const parts: Record<string, { total: number[]; encode: number[]; step: number[]; steps: number }> = {};
  for (let r = 0; r < rounds + 1; r++) {
    for (const whole of [false, true]) {
      let inStep = 0;
      let steps = 0;
      const timed =
        <A extends unknown[], R>(f: (...a: A) => Promise<R>) =>
        async (...a: A): Promise<R> => {
          const t0 = performance.now();
          const out = await f(...a);
          inStep += performance.now() - t0;
          steps++;
          return out;
        };
      const m: StepModel<DecoderState> = {
        ...rt.stepModel,
        step: timed(rt.stepModel.step),
        ...(whole ? { stepTop: undefined, topK: undefined } : { stepTop: timed(rt.stepModel.stepTop!) }),
      };
      const t0 = performance.now();
      const state = await rt.encode(srcs);
      const tEnc = performance.now() - t0;
      await generate(m, state, batch, { beam, minLen: len, maxLen: len });
      if (r === 0) continue; // warm-up
      const p = (parts[whole ? 'whole-row steps' : 'top-k steps'] ??= { total: [], encode: [], step: [], steps });
      p.total.push(performance.now() - t0);
      p.encode.push(tEnc);
      p.step.push(inStep);
    }
  }
  process.stdout.write(
    `generate, median of ${rounds} interleaved rounds, ms per decoder step (encoder spread over the steps):\n`,
  );
  for (const [name, p] of Object.entries(parts)) {
    const [total, enc, step] = [median(p.total), median(p.encode), median(p.step)];
    process.stdout.write(
      `  ${name.padEnd(16)} total ${ms(total / p.steps)}  encoder ${ms(enc / p.steps)}  step calls ${ms(step / p.steps)}  ` +
        `search (JS) ${ms((total - enc - step) / p.steps)}   (${p.steps} steps, ${ms(total)} ms a batch)\n`,
    );
  }
  await rt.release();

  if (model.card.graphs.decoder.cache === undefined) await profileStepAlone(model, srcs);
  else await profileThroughGenerate(model, srcs);
} finally {
  await rm(root, { recursive: true, force: true });
}
