/**
 * The engines bench:decode times frost against, per architecture: each a child process answering one JSON line per
 * request (bench/peer/*.py), started with the bench and skipped, with the reason printed, when it cannot run (no
 * torch, no ctranslate2 module). An architecture with none listed here is timed on frost alone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Precision } from '../export/precision.ts';
import { REPO_ROOT } from '../train/data/paths.ts';
import { cpuIsa } from '../train/backend/kernels/gemm-probe.ts';
import { IMAGE_BLAS_ENV } from './blas-env.ts';
import type { BenchModel } from './decode-model.ts';

export interface DecodePeerSpec {
  /** Short name, in the tables' peer column. */
  name: string;
  /** What the engine is called in messages. */
  label: string;
  /** Repository-relative script, run with `--python`. */
  script: string;
  args(threads: number): string[];
  /** Environment added to the bench's for the child, and the variables removed from it. */
  env?(settings: PeerSettings): { set?: Record<string, string>; unset?: readonly string[] };
  /** The first request; its answer is the settings line printed for the peer. */
  probe: Record<string, unknown>;
  /** What to install when it cannot start, for the message that skips it. */
  hint: string;
  /**
   * Whether it decodes frost's own weights: the bench then writes them (bench/decode-model.ts's `params`) and checks
   * that both engines produce the same tokens before it times them.
   */
  sameWeights: boolean;
  /** The `model` request for a written bench model at frost's `precision` (the peer's counterpart), under `key`. */
  modelRequest(
    model: BenchModel,
    head: string,
    precision: Precision,
    threads: number,
  ): Record<string, unknown> & { key: string };
}

/** bench/peer/rnn_attn_decode.py: the PyTorch rnn-attn, its own seeded weights, dynamic int8 for frost's int8. */
const torchRnnAttn: DecodePeerSpec = {
  name: 'torch',
  label: 'PyTorch',
  script: 'bench/peer/rnn_attn.py',
  args: (threads) => ['--decode-server', '--threads', String(threads)],
  probe: {
    cmd: 'model',
    key: 'probe',
    head: 'learned',
    srcVocab: 8,
    tgtVocab: 8,
    config: { embedding: 4, hidden: 4, encoderHidden: 2, attention: 4, output: 4, dropout: 0 },
  },
  hint: 'is python3-torch installed?',
  sameWeights: false,
  modelRequest: (model, head, precision) => ({
    cmd: 'model',
    key: `${head}/${precision === 'fp32' ? 'fp32' : 'int8'}`,
    head,
    srcVocab: model.card.source!.tokens.length,
    tgtVocab: model.card.target.tokens.length,
    config: model.archConfig,
    int8: precision !== 'fp32',
  }),
};

/**
 * Where a CTranslate2 built from source keeps libctranslate2.so (the folder), when it is not on the loader's path:
 * added to the peer's LD_LIBRARY_PATH. A `pip install ctranslate2` needs none.
 */
export const CT2_LIB_ENV = 'FROST_CT2_LIB';

/** How a peer is configured: as it configures itself (`default`), or tuned as its users tune it (`best`). */
export interface PeerSettings {
  ct2: 'best' | 'default';
}

/**
 * The widest ISA CTranslate2 has code for that the CPU runs: CTranslate2 picks AVX2 on AMD CPUs with AVX-512 unless
 * CT2_FORCE_CPU_ISA says otherwise (src/cpu/cpu_info.cc).
 */
export function widestCt2Isa(isa: readonly string[] = cpuIsa().isa): string {
  return isa.includes('avx512f') && isa.includes('avx512bw') ? 'AVX512' : isa.includes('avx2') ? 'AVX2' : 'GENERIC';
}

/**
 * bench/peer/ctranslate2_decode.py: frost's Transformer weights written as a CTranslate2 model. frost's int8 and
 * int8-compute are both timed against CTranslate2's int8 compute types (int8, int8_float32: the faster of the two).
 */
const ctranslate2Transformer: DecodePeerSpec = {
  name: 'ct2',
  label: 'CTranslate2',
  script: 'bench/peer/ctranslate2_decode.py',
  args: () => [],
  env: ({ ct2 }) => {
    const lib = process.env[CT2_LIB_ENV];
    const path = [lib, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':');
    return {
      set: {
        // CT2_VERBOSE=1: CTranslate2 logs its CPU, ISA and GEMM backends when it loads a model.
        CT2_VERBOSE: '1',
        ...(path ? { LD_LIBRARY_PATH: path } : {}),
        // At its best: the widest ISA forced (a user's own CT2_FORCE_CPU_ISA is kept), OpenBLAS on the CPU's kernels.
        ...(ct2 === 'best' ? { CT2_FORCE_CPU_ISA: process.env.CT2_FORCE_CPU_ISA ?? widestCt2Isa() } : {}),
      },
      unset: ct2 === 'best' ? IMAGE_BLAS_ENV : [],
    };
  },
  probe: { cmd: 'info' },
  hint: `pip install ctranslate2, or build it and set ${CT2_LIB_ENV} to the folder of libctranslate2.so`,
  sameWeights: true,
  modelRequest: (model, head, precision, threads) => ({
    cmd: 'model',
    key: `${head}/${precision}`,
    dir: model.dir,
    params: model.params,
    head,
    config: model.archConfig,
    tokens: { source: model.card.source!.tokens, target: model.card.target.tokens },
    specials: model.card.specials,
    computeTypes: precision === 'fp32' ? ['float32'] : ['int8', 'int8_float32'],
    threads,
  }),
};

/**
 * bench/peer/transformer_decode.py: frost's Transformer weights in PyTorch modules decoding incrementally (fairseq's
 * cached keys and values), dynamic int8 on its Linear layers for frost's int8 and int8-compute.
 */
const torchTransformer: DecodePeerSpec = {
  name: 'torch',
  label: 'PyTorch',
  script: 'bench/peer/transformer_decode.py',
  args: (threads) => ['--threads', String(threads)],
  probe: { cmd: 'info' },
  hint: 'is python3-torch installed?',
  sameWeights: true,
  modelRequest: (model, head, precision) => ({
    cmd: 'model',
    key: `${head}/${precision}`,
    params: model.params,
    head,
    config: model.archConfig,
    int8: precision !== 'fp32',
  }),
};

const PEERS: Readonly<Record<string, readonly DecodePeerSpec[]>> = {
  'rnn-attn': [torchRnnAttn],
  transformer: [torchTransformer, ctranslate2Transformer],
};

/** The peers bench:decode times `arch` against (none: frost alone). */
export function decodePeers(arch: string): readonly DecodePeerSpec[] {
  return PEERS[arch] ?? [];
}

/** A started peer answering one JSON line per request. */
export class DecodePeer {
  private readonly lines: AsyncIterator<string>;

  private constructor(
    readonly spec: DecodePeerSpec,
    private readonly child: ChildProcess,
  ) {
    this.lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
    // A peer that exited is reported by ask(); writing to its closed stdin must not throw as well.
    child.stdin!.on('error', () => undefined);
  }

  /**
   * Starts the peer and sends its probe.
   * @returns the peer and the probe's answer (its settings), or why it is skipped
   */
  static async start(
    spec: DecodePeerSpec,
    python: string,
    threads: number,
    settings: PeerSettings,
  ): Promise<{ peer: DecodePeer; settings: Record<string, unknown> } | { skipped: string }> {
    const { set = {}, unset = [] } = spec.env?.(settings) ?? {};
    // OpenMP's pool at the peer's thread count: Debian's OpenBLAS (openmp) under torch and CTranslate2 otherwise
    // sizes its own by the cores, and under torch.set_num_threads(1) a GRU's sgemm then spun in exec_blas for
    // minutes on a loaded 2-core machine.
    const env: NodeJS.ProcessEnv = { ...process.env, OMP_NUM_THREADS: String(threads), ...set };
    for (const name of unset) delete env[name];
    const child = spawn(python, [join(REPO_ROOT, spec.script), ...spec.args(threads)], {
      stdio: ['pipe', 'pipe', 'inherit'],
      env,
    });
    let spawnError: Error | undefined;
    child.on('error', (err) => (spawnError = err));
    const peer = new DecodePeer(spec, child);
    try {
      const info = await peer.ask<Record<string, unknown>>(spec.probe);
      if (typeof info.unavailable === 'string') {
        peer.stop();
        return { skipped: `${info.unavailable} (${spec.hint})` };
      }
      const changed = [...Object.entries(set).map(([k, v]) => `${k}=${v}`), ...unset.map((k) => `${k} unset`)];
      return { peer, settings: { ...info, env: changed.join(' ') } };
    } catch (err) {
      peer.stop();
      return { skipped: spawnError ? `${python}: ${spawnError.message}` : (err as Error).message };
    }
  }

  /** @throws Error when the peer has exited or answers with an error */
  async ask<T>(req: Record<string, unknown>): Promise<T> {
    if (this.child.stdin!.writable) this.child.stdin!.write(`${JSON.stringify(req)}\n`);
    const next = await this.lines.next();
    if (next.done)
      throw new Error(
        `the ${this.spec.label} peer exited (${this.child.signalCode ?? `exit code ${this.child.exitCode}`}); ${this.spec.hint}`,
      );
    const reply = JSON.parse(next.value) as T & { error?: string };
    if (reply.error) throw new Error(`${this.spec.label} peer: ${reply.error}`);
    return reply;
  }

  stop(): void {
    this.child.stdin!.end();
  }
}
