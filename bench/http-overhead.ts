/**
 * Where a request's time goes at c=1 (bench/http-latency.ts): in-process `translate`, the decode thread without
 * HTTP (`WorkerRuntime`), the server's own `timing.total_ms`, and `POST /v1/translate` and a bare `GET /healthz`
 * from a client in a process of its own, every way interleaved in random order; p50 and p90 of each, and the
 * overheads against in-process; and, as floors, the same POST to a bare node:http server (no express) that decodes
 * through a decode thread or in its own thread. `--in-process-clients` adds clients inside the server's process
 * (node:http and `fetch`), whose work shares the server's event loop; `--stages` times the stages of each POST
 * inside the server (bench/http-latency.ts's STAGE).
 *
 *   npm run bench:http [-- --model DIR] [--requests 200] [--in-process-clients] [--stages]
 *
 * Without --model it writes bench:decode's untrained `tiny` rnn-attn model (bench/decode-model.ts) to a temp
 * folder and feeds it texts of 8-15 of its source words.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { writeBenchModel } from './decode-model.ts';
import { formatHttpLatency, measureHttpLatency } from './http-latency.ts';

const { values: args } = parseArgs({
  options: {
    model: { type: 'string' },
    requests: { type: 'string', default: '200' },
    'in-process-clients': { type: 'boolean', default: false },
    stages: { type: 'boolean', default: false },
  },
});
const requests = Number(args.requests);
if (!Number.isInteger(requests) || requests < 1) throw new Error(`--requests must be a positive integer`);

const root = args.model === undefined ? await mkdtemp(join(tmpdir(), 'frost-http-overhead-')) : undefined;
try {
  const written = root === undefined ? undefined : await writeBenchModel(root, { head: 'learned', preset: 'tiny' });
  const dir = args.model ?? written!.dir;
  const texts =
    written === undefined
      ? ['Ein Mann fährt Fahrrad .', 'Zwei Hunde spielen im Schnee .', 'Eine Frau liest ein Buch im Park .']
      : Array.from({ length: 8 }, (_, k) =>
          Array.from(
            { length: 8 + k },
            (_, j) => written.sourceWords[(j * 37 + k * 11) % written.sourceWords.length],
          ).join(' '),
        );
  const result = await measureHttpLatency({
    dir,
    texts,
    requests,
    inProcessClients: args['in-process-clients'],
    stages: args.stages,
  });
  process.stdout.write(
    `HTTP latency at c=1: ${args.model ?? 'bench tiny rnn-attn (learned, fp32)'}, ${requests} rounds, every way ` +
      `interleaved, 1 decode thread, 1 intra-op thread\nmachine: ${cpus().length} × ${cpus()[0]?.model}, node ` +
      `${process.version}\n\n${formatHttpLatency(result)}`,
  );
} finally {
  if (root !== undefined) await rm(root, { recursive: true, force: true });
}
