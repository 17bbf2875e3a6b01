/**
 * Issue #41: two exported Transformer step graphs (model folders written by transformer-decode.ts --save) timed
 * step by step on the same state, alternately: the encoder of each folder, `--position` real steps to fill the
 * caches, then `--reps` steps at that position on each, measured in process CPU time (min and median per step).
 *
 *   node --import tsx bench/investigations/transformer-step-ab.ts A_DIR B_DIR [--rows 64] [--position 10]
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createNodeSession, ort } from '../../core/runtime/ort-node.ts';

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rows: { type: 'string', default: '64' },
    position: { type: 'string', default: '10' },
    reps: { type: 'string', default: '40' },
  },
});
const rows = Number(args.rows);
const S = 20;

async function open(dir: string) {
  const card = JSON.parse(await readFile(join(dir, 'model-card.json'), 'utf8'));
  const enc = await createNodeSession(await readFile(join(dir, card.graphs.encoder.file)), { intraOpNumThreads: 1 });
  const dec = await createNodeSession(await readFile(join(dir, card.graphs.decoder.file)), { intraOpNumThreads: 1 });
  const ids = BigInt64Array.from({ length: rows * S }, (_, i) => BigInt(4 + ((i * 37) % 7000)));
  const out = await enc.run({
    src_ids: new ort.Tensor('int64', ids, [rows, S]),
    src_lengths: new ort.Tensor(
      'int64',
      BigInt64Array.from({ length: rows }, () => BigInt(S)),
      [rows],
    ),
  });
  let feeds: Record<string, ort.Tensor> = {};
  for (const n of dec.inputNames) if (out[n]) feeds[n] = out[n]!;
  const prev = new ort.Tensor(
    'int64',
    BigInt64Array.from({ length: rows }, (_, i) => BigInt(5 + i)),
    [rows],
  );
  const fetches: string[] = [
    card.graphs.decoder.top.logProbs,
    card.graphs.decoder.top.tokens,
    ...card.graphs.decoder.state.map((n: string) => `next_${n}`),
  ];
  for (let t = 0; t < Number(args.position); t++) {
    const o = await dec.run({ ...feeds, prev_token: prev }, fetches);
    feeds = { ...feeds };
    for (const n of card.graphs.decoder.state as string[]) feeds[n] = o[`next_${n}`]!;
  }
  return async () => {
    const c0 = process.cpuUsage();
    await dec.run({ ...feeds, prev_token: prev }, process.env.NO_STATE ? fetches.slice(0, 2) : fetches);
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
    `${p}: min ${s[0]!.toFixed(2)} ms, median ${s[s.length >> 1]!.toFixed(2)} ms (rows ${rows}, position ${args.position})`,
  );
});
