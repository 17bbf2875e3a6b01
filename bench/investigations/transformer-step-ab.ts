/**
 * Issue #41: two exported Transformer step graphs (model folders written by transformer-decode.ts --save) timed
 * step by step on the same state, alternately: the encoder of each folder on rows / beam sources, the caches filled
 * to `--position` (append caches: seeded values in a buffer of the runtime's capacity; Concat caches: real steps),
 * the memory fed per source or per row as each card says, then `--reps` steps at that position on each, measured in
 * process CPU time (min and median per step).
 *
 *   node --import tsx bench/investigations/transformer-step-ab.ts A_DIR B_DIR [--rows 80] [--beam 5] [--position 10]
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CACHE_CHUNK, stateOutput } from '../../core/runtime/append-cache.ts';
import { modelCardSchema } from '../../core/runtime/model-card.ts';
import { createNodeSession, ort } from '../../core/runtime/ort-node.ts';
import { gatherRows, type HostTensor } from '../../core/runtime/row-state.ts';

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rows: { type: 'string', default: '64' },
    position: { type: 'string', default: '10' },
    /** Rows per source: the memory is encoded for rows / beam sources. */
    beam: { type: 'string', default: '1' },
    reps: { type: 'string', default: '40' },
  },
});
const rows = Number(args.rows);
const beam = Number(args.beam);
if (!Number.isInteger(rows / beam)) throw new Error(`--rows ${rows} is not a multiple of --beam ${beam}`);
const sources = rows / beam;
const position = Number(args.position);
const S = 20;

async function open(dir: string) {
  const card = modelCardSchema.parse(JSON.parse(await readFile(join(dir, 'model-card.json'), 'utf8')));
  const dec = card.graphs.decoder;
  const enc = await createNodeSession(await readFile(join(dir, card.graphs.encoder.file)), { intraOpNumThreads: 1 });
  const step = await createNodeSession(await readFile(join(dir, dec.file)), { intraOpNumThreads: 1 });
  const ids = BigInt64Array.from({ length: sources * S }, (_, i) => BigInt(4 + ((i * 37) % 7000)));
  const out = await enc.run({
    src_ids: new ort.Tensor('int64', ids, [sources, S]),
    src_lengths: new ort.Tensor(
      'int64',
      BigInt64Array.from({ length: sources }, () => BigInt(S)),
      [sources],
    ),
  });
  // One memory row per source when the card says so, else each source's row once per beam (as the runtime feeds).
  const beams = Int32Array.from({ length: rows }, (_, i) => Math.floor(i / beam));
  const perRow = (t: ort.Tensor) => gatherRows(ort, t as HostTensor, beams);
  let feeds: Record<string, ort.Tensor> = {};
  for (const n of dec.memory) feeds[n] = dec.groupedMemory ? out[n]! : perRow(out[n]!);
  const prev = new ort.Tensor(
    'int64',
    BigInt64Array.from({ length: rows }, (_, i) => BigInt(5 + i)),
    [rows],
  );
  const fetches = [dec.top!.logProbs, dec.top!.tokens, ...dec.state.map((n) => stateOutput(dec, n))];
  if (dec.cache) {
    // Append caches filled to `position` in a buffer of the runtime's capacity: seeded finite values, as a step reads
    // them whatever they hold.
    const capacity = Math.max(CACHE_CHUNK, Math.ceil((position + 1) / CACHE_CHUNK) * CACHE_CHUNK);
    for (const n of dec.state) {
      const [, h, , dk] = out[n]!.dims as number[];
      const size = rows * h! * capacity * dk!;
      feeds[n] = new ort.Tensor(
        'float32',
        Float32Array.from({ length: size }, (_, i) => Math.sin(i)),
        [rows, h!, capacity, dk!],
      );
    }
    feeds[dec.cache.length] = new ort.Tensor('int64', [BigInt(position)], []);
  } else {
    for (const n of dec.state) feeds[n] = perRow(out[n]!);
    for (let t = 0; t < position; t++) {
      const o = await step.run({ ...feeds, prev_token: prev }, fetches);
      feeds = { ...feeds };
      for (const n of dec.state) feeds[n] = o[stateOutput(dec, n)]!;
    }
  }
  return async () => {
    const c0 = process.cpuUsage();
    await step.run({ ...feeds, prev_token: prev }, process.env.NO_STATE ? fetches.slice(0, 2) : fetches);
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / 1000;
  };
}

const runs = await Promise.all(positionals.map(open));
const times: number[][] = runs.map(() => []);
for (let r = 0; r < Number(args.reps) + 3; r++)
  for (let i = 0; i < runs.length; i++) {
    const j = (i + r) % runs.length;
    const ms = await runs[j]!();
    if (r >= 3) times[j]!.push(ms);
  }
const sorted = times.map((t) => [...t].sort((a, b) => a - b));
positionals.forEach((p, i) => {
  const s = sorted[i]!;
  console.log(
    `${p}: min ${s[0]!.toFixed(2)} ms, median ${s[s.length >> 1]!.toFixed(2)} ms (rows ${rows}, beam ${beam}, position ${position})`,
  );
});
