/**
 * Per-shape choice of the GEMM runner (issue #52): which of the native providers (gemm-providers.ts) or XNNPACK
 * runs a product is decided by a short measured probe, not by which library happens to be installed. On one
 * machine the image's OPENBLAS_CORETYPE=Haswell held OpenBLAS to AVX2 kernels: MLAS was 2-4× faster on mid-sized
 * products and 2× slower on the logits; unset, OpenBLAS's own kernels tripled its peak. Only a measurement knows.
 *
 * Shape classes: the transposes (nn, nt, tn, tt) × a size bucket of M·K·N (multiply-adds, in steps of 8×:
 * < 2¹⁸, < 2²¹, < 2²⁴, < 2²⁷, < 2³⁰, larger). The probe times one representative product of each class through
 * every runner that loads (XNNPACK only in the three small buckets: above them it is 4-10× slower, and timing it
 * would cost more than the rest), interleaved, the best of a few calls each, and picks the fastest; ≈ 0.5-1 s in
 * all on a 2-core VM. The dispatcher (makeDispatcher) then sends each product to its class's runner; products
 * below that runner's minMacs (minEntryMacs for one entry of a batched product) stay in XNNPACK as before.
 *
 * Cache: the choice is kept per machine in gemm-probe.json under $FROST_CACHE, else the OS cache folder
 * ($XDG_CACHE_HOME or ~/.cache on Linux)/frost, keyed by what the choice depends on: the CPU model and ISA, each
 * provider's description (OpenBLAS's version and core name), the thread count and the environment the libraries
 * read (OPENBLAS_*, OMP_*, GOMP_SPINCOUNT, FROST_BLAS). Any change there probes again. The file is written
 * atomically (a temporary sibling renamed over it), and a probe holds a lock file meanwhile, so the many processes
 * of a test suite probe once and then all make the same choice. A file that does not parse is ignored with a
 * warning and replaced. A cached choice is kept until its key changes, so that every run on a machine computes
 * the same way (cached test fixtures are compared bit for bit with fresh runs); FROST_GEMM_PROBE=refresh measures
 * again and replaces it (bench:train does, at its start). The load average per core at the probe is recorded and
 * shown: a probe taken on a busy machine (threads waiting for a busy core made OpenBLAS look 20-70× slower than it
 * is, ≈ 6 ms a call) is worth refreshing when it is quiet.
 */
import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { arch, availableParallelism, cpus, homedir, loadavg, platform } from 'node:os';
import { dirname, join } from 'node:path';
import type { GemmProviderName, GemmRunnerName, NativeGemm } from './native-gemm.ts';

/** Bumped when the classes or the probe change: older cache entries are then not used. */
export const PROBE_VERSION = 1;

/** Upper bounds (exclusive) of the size buckets, in multiply-adds; the last bucket has none. */
const BUCKET_LIMITS = [2 ** 18, 2 ** 21, 2 ** 24, 2 ** 27, 2 ** 30];

/** One representative [M, K, N] per bucket: thin products as training makes them (the 4th: a GRU step's h·Wh). */
export const BUCKET_SHAPES: readonly (readonly [number, number, number])[] = [
  [32, 64, 64],
  [64, 128, 128],
  [64, 512, 256],
  [64, 512, 1536],
  [256, 512, 2048],
  [1024, 512, 2048],
];

/** XNNPACK (one wasm thread) is timed only in these buckets. */
const XNNPACK_BUCKETS = 3;

export function sizeBucket(macs: number): number {
  const i = BUCKET_LIMITS.findIndex((limit) => macs < limit);
  return i < 0 ? BUCKET_LIMITS.length : i;
}

/** The class of a product: 'nt:3' is A plain, B transposed, 2²⁴ ≤ M·K·N < 2²⁷. */
export function shapeClass(M: number, K: number, N: number, tA: boolean, tB: boolean): string {
  return `${tA ? 't' : 'n'}${tB ? 't' : 'n'}:${sizeBucket(M * K * N)}`;
}

export interface ProbeShape {
  class: string;
  M: number;
  K: number;
  N: number;
  tA: boolean;
  tB: boolean;
}

/** Every class with its representative product. */
export function probeShapes(): ProbeShape[] {
  const shapes: ProbeShape[] = [];
  for (const [M, K, N] of BUCKET_SHAPES)
    for (const tA of [false, true])
      for (const tB of [false, true]) shapes.push({ class: shapeClass(M, K, N, tA, tB), M, K, N, tA, tB });
  return shapes;
}

export interface ProbeCandidate {
  name: GemmRunnerName;
  /** null: XNNPACK. */
  runner: NativeGemm | null;
}

/** Milliseconds of one call of the product through a candidate (bench or probe: through tf.matMul). */
export type TimeProduct = (candidate: ProbeCandidate, shape: ProbeShape) => number;

export interface ClassChoice {
  class: string;
  /** The representative product timed. */
  shape: string;
  chosen: GemmRunnerName;
  /** Best time of a call per candidate timed, in ms. */
  ms: Partial<Record<GemmRunnerName, number>>;
}

/** Times every class through every candidate (interleaved, best of `reps` after a warm-up call) and picks. */
export function probeClasses(candidates: readonly ProbeCandidate[], time: TimeProduct, reps = 4): ClassChoice[] {
  const out: ClassChoice[] = [];
  for (const shape of probeShapes()) {
    const bucket = Number(shape.class.split(':')[1]);
    const timed = candidates.filter((c) => c.runner != null || bucket < XNNPACK_BUCKETS);
    if (timed.length === 0) continue;
    const best = timed.map(() => Infinity);
    const n = bucket >= 4 ? Math.min(reps, 2) : reps;
    for (let r = 0; r <= n; r++)
      for (const [i, c] of timed.entries()) {
        const ms = time(c, shape);
        if (r > 0) best[i] = Math.min(best[i], ms); // the first call packs, transposes or creates a session
      }
    let k = 0;
    for (let i = 1; i < timed.length; i++) if (best[i] < best[k]) k = i;
    out.push({
      class: shape.class,
      shape: `${shape.tA ? `[${shape.K}×${shape.M}]ᵀ` : `[${shape.M}×${shape.K}]`}·${shape.tB ? `[${shape.N}×${shape.K}]ᵀ` : `[${shape.K}×${shape.N}]`}`,
      chosen: timed[k].name,
      ms: Object.fromEntries(timed.map((c, i) => [c.name, Number(best[i].toFixed(4))])),
    });
  }
  return out;
}

/** What the run folder (gemm.json) and the logs record of the choice. */
export interface GemmChoiceRecord {
  mode: 'probe';
  /** From the cache file (another process probed), or measured in this one. */
  source: 'cache' | 'probe';
  cacheFile: string | null;
  probedAt: string;
  /** The 1-minute load average per core when the probe ran. */
  loadPerCore: number;
  key: ProbeKey;
  classes: ClassChoice[];
}

/** What a probe's choice depends on: any change probes again. */
export interface ProbeKey {
  version: number;
  cpu: string;
  isa: string[];
  platform: string;
  arch: string;
  threads: number;
  providers: string[];
  env: Record<string, string>;
}

/** Environment variables the libraries read that change their speed. */
const KEY_ENV = /^(OPENBLAS_|GOTO|OMP_|GOMP_|KMP_|MKL_|FROST_BLAS$|FROST_WASM_THREADS$)/;

/** The CPU's model and its SIMD extensions that GEMM kernels use (from /proc/cpuinfo on Linux). */
export function cpuIsa(): { model: string; isa: string[] } {
  const model = cpus()[0]?.model?.trim() || 'unknown cpu';
  let flags: string[] = [];
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8')
      .split('\n')
      .find((l) => /^(flags|Features)\s*:/.test(l));
    flags = line?.split(':')[1].trim().split(/\s+/) ?? [];
  } catch {
    // not Linux: the model names it
  }
  const wanted: [string, string[]][] = [
    ['avx2', ['avx2']],
    ['fma', ['fma']],
    ['avx512f', ['avx512f']],
    ['avx512bw', ['avx512bw']],
    ['avx512_vnni', ['avx512_vnni', 'avx512vnni']],
    ['avx512_bf16', ['avx512_bf16']],
    ['avx_vnni', ['avx_vnni']],
    ['amx_tile', ['amx_tile']],
    ['neon', ['asimd', 'neon']],
    ['sve', ['sve']],
  ];
  return { model, isa: wanted.filter(([, names]) => names.some((n) => flags.includes(n))).map(([name]) => name) };
}

export function probeKey(threads: number, runners: readonly NativeGemm[]): ProbeKey {
  const { model, isa } = cpuIsa();
  const env = Object.fromEntries(
    Object.entries(process.env)
      .filter(([k, v]) => KEY_ENV.test(k) && v != null)
      .sort(([a], [b]) => a.localeCompare(b)),
  ) as Record<string, string>;
  return {
    version: PROBE_VERSION,
    cpu: model,
    isa,
    platform: platform(),
    arch: arch(),
    threads,
    providers: runners.map((r) => `${r.description}${r.kernel != null ? ` [${r.kernel}]` : ''}`),
    env,
  };
}

const keyHash = (key: ProbeKey) => createHash('sha256').update(JSON.stringify(key)).digest('hex').slice(0, 20);

/** The folder frost caches per-machine measurements in: $FROST_CACHE, else the OS cache folder's frost/. */
export function frostCacheDir(): string {
  const explicit = process.env.FROST_CACHE?.trim();
  if (explicit) return explicit;
  if (process.platform === 'darwin') return join(homedir(), 'Library', 'Caches', 'frost');
  if (process.platform === 'win32')
    return join(process.env.LOCALAPPDATA ?? join(homedir(), 'AppData', 'Local'), 'frost');
  return join(process.env.XDG_CACHE_HOME?.trim() || join(homedir(), '.cache'), 'frost');
}

export const probeCacheFile = () => join(frostCacheDir(), 'gemm-probe.json');

interface CacheEntry {
  key: ProbeKey;
  probedAt: string;
  /** The 1-minute load average per core when the probe ran. */
  loadPerCore?: number;
  classes: ClassChoice[];
}

interface CacheFile {
  version: number;
  entries: Record<string, CacheEntry>;
}

/** The cache's entries, or none (with a warning) when the file is there but damaged. */
function readCache(file: string, warn: (line: string) => void): CacheFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return { version: 1, entries: {} };
  }
  try {
    const parsed = JSON.parse(text) as CacheFile;
    if (parsed == null || typeof parsed.entries !== 'object' || parsed.entries == null) throw new Error('no entries');
    for (const e of Object.values(parsed.entries))
      if (
        !Array.isArray(e.classes) ||
        e.classes.some((c) => typeof c.class !== 'string' || typeof c.chosen !== 'string')
      )
        throw new Error('an entry without classes');
    return parsed;
  } catch (e) {
    warn(
      `frost: ignoring the GEMM probe cache ${file} (${e instanceof Error ? e.message.split('\n')[0] : String(e)}); probing again`,
    );
    return { version: 1, entries: {} };
  }
}

function writeCache(file: string, cache: CacheFile): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, `${JSON.stringify(cache, null, 1)}\n`);
  renameSync(tmp, file);
}

const sleepMs = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** A lock older than this is a crashed prober's: taken over. */
const STALE_LOCK_MS = 60_000;

/**
 * Holds `${file}.lock` while fn runs, so that one process probes and the others wait for its result (up to
 * `waitMs`, then they probe too rather than stall). Returns fn's result; `reread` is called after each wait.
 */
function withProbeLock<T>(file: string, reread: () => T | null, fn: () => T, waitMs = 30_000): T {
  const lock = `${file}.lock`;
  const started = Date.now();
  for (;;) {
    let fd: number | null = null;
    try {
      mkdirSync(dirname(file), { recursive: true });
      fd = openSync(lock, 'wx');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') return fn(); // an unwritable cache: probe, keep nothing
    }
    if (fd != null) {
      try {
        closeSync(fd);
        return reread() ?? fn();
      } finally {
        rmSync(lock, { force: true });
      }
    }
    try {
      if (Date.now() - statSync(lock).mtimeMs > STALE_LOCK_MS) rmSync(lock, { force: true });
    } catch {
      // gone meanwhile
    }
    if (Date.now() - started > waitMs) return fn();
    sleepMs(100);
    const found = reread();
    if (found != null) return found;
  }
}

export interface ChooseOptions {
  /** Where the choices are cached (default probeCacheFile()); null: no cache. */
  cacheFile?: string | null;
  warn?: (line: string) => void;
  /** The 1-minute load average per core (default: the system's). */
  loadPerCore?: () => number;
  /** Measure again even when the cache has an entry (default: FROST_GEMM_PROBE=refresh). */
  refresh?: boolean;
}

/**
 * The per-class choice for these runners: from the cache when an entry has this key, else measured with `time`
 * (and cached).
 */
export function chooseRunners(
  threads: number,
  runners: readonly NativeGemm[],
  time: TimeProduct,
  opts: ChooseOptions = {},
): GemmChoiceRecord {
  const key = probeKey(threads, runners);
  const hash = keyHash(key);
  const file = opts.cacheFile === undefined ? probeCacheFile() : opts.cacheFile;
  const warn = opts.warn ?? ((line: string) => console.warn(line));
  const candidates: ProbeCandidate[] = [
    ...runners.map((r) => ({ name: r.provider as GemmProviderName, runner: r })),
    { name: 'xnnpack' as const, runner: null },
  ];
  const load = opts.loadPerCore ?? (() => loadavg()[0] / availableParallelism());
  const measure = (): GemmChoiceRecord => {
    const loadPerCore = Number(load().toFixed(2));
    const classes = probeClasses(candidates, time);
    return {
      mode: 'probe',
      source: 'probe',
      cacheFile: file,
      probedAt: new Date().toISOString(),
      loadPerCore,
      key,
      classes,
    };
  };
  if (file == null) return { ...measure(), cacheFile: null };
  let warned = false;
  const cached = (): GemmChoiceRecord | null => {
    const entry = readCache(file, (l) => {
      if (!warned) warn(l);
      warned = true;
    }).entries[hash];
    if (entry == null || JSON.stringify(entry.key) !== JSON.stringify(key)) return null;
    return {
      mode: 'probe',
      source: 'cache',
      cacheFile: file,
      probedAt: entry.probedAt,
      loadPerCore: entry.loadPerCore ?? NaN,
      key,
      classes: entry.classes,
    };
  };
  const refresh = opts.refresh ?? process.env.FROST_GEMM_PROBE?.trim().toLowerCase() === 'refresh';
  const hit = refresh ? null : cached();
  if (hit != null) return hit;
  return withProbeLock(file, refresh ? () => null : cached, () => {
    const record = measure();
    try {
      const cache = readCache(file, () => {});
      cache.entries[hash] = {
        key,
        probedAt: record.probedAt,
        loadPerCore: record.loadPerCore,
        classes: record.classes,
      };
      writeCache(file, cache);
    } catch (e) {
      warn(`frost: cannot cache the GEMM probe in ${file} (${e instanceof Error ? e.message : String(e)})`);
    }
    return record;
  });
}

/** One line: which runner took how many classes ('blas 14, mlas 6, xnnpack 4'). */
export function choiceSummary(record: GemmChoiceRecord): string {
  const counts = new Map<string, number>();
  for (const c of record.classes) counts.set(c.chosen, (counts.get(c.chosen) ?? 0) + 1);
  return [...counts].map(([name, n]) => `${name} ${n}`).join(', ');
}

/**
 * A runner that sends each product to its class's chosen runner; classes XNNPACK won (or whose runner is not
 * loaded) are declined through `accepts`, so frost's BatchMatMul keeps them in XNNPACK.
 */
export function makeDispatcher(runners: readonly NativeGemm[], record: GemmChoiceRecord): NativeGemm {
  const byName = new Map(runners.map((r) => [r.provider, r]));
  // Indexed by transposes and size bucket, not by the class's name: this runs on every product of a training step.
  const buckets = BUCKET_LIMITS.length + 1;
  const slot = (tA: boolean, tB: boolean, bucket: number) => ((tA ? 2 : 0) + (tB ? 1 : 0)) * buckets + bucket;
  const chosen: (NativeGemm | null | undefined)[] = new Array<undefined>(4 * buckets).fill(undefined);
  for (const c of record.classes) {
    const m = /^([nt])([nt]):(\d+)$/.exec(c.class);
    if (m == null) continue;
    chosen[slot(m[1] === 't', m[2] === 't', Number(m[3]))] =
      c.chosen === 'xnnpack' ? null : (byName.get(c.chosen) ?? null);
  }
  const used = [...new Set(chosen.filter((r): r is NativeGemm => r != null))];
  const fallback = used[0] ?? runners[0];
  if (fallback == null) throw new Error('makeDispatcher: no runner');
  const runnerFor = (M: number, K: number, N: number, tA: boolean, tB: boolean) =>
    chosen[slot(tA, tB, sizeBucket(M * K * N))];
  const threads = Math.max(...runners.map((r) => r.threads));
  return {
    provider: 'probe',
    threads,
    choice: record,
    kernel: runners.flatMap((r) => (r.kernel != null ? [r.kernel] : [])).join('; ') || undefined,
    minMacs: Math.min(...(used.length > 0 ? used : runners).map((r) => r.minMacs)),
    minEntryMacs: Math.min(...(used.length > 0 ? used : runners).map((r) => r.minEntryMacs)),
    description:
      `per shape class, probed (${record.source === 'cache' ? 'cached' : 'measured now'}` +
      `${record.loadPerCore > 1 ? `, under load ${record.loadPerCore} a core` : ''}): ${choiceSummary(record)}; ` +
      runners.map((r) => r.description).join('; '),
    accepts(M, K, N, tA, tB, batched) {
      const r = runnerFor(M, K, N, tA, tB);
      if (r == null) return false;
      return M * K * N >= (batched ? r.minEntryMacs : r.minMacs);
    },
    gemm(A, B, Y, M, K, N, tA, tB) {
      // A class left to XNNPACK only comes here when a caller ignores accepts (bench:gemm forces every runner).
      (runnerFor(M, K, N, tA, tB) ?? fallback).gemm(A, B, Y, M, K, N, tA, tB);
    },
    dispose() {
      for (const r of runners) r.dispose();
    },
  };
}
