/**
 * Per-shape choice of the GEMM runner (issue #52): which of the native providers (gemm-providers.ts) or XNNPACK
 * runs a product is decided by a short measured probe, not by which library happens to be installed. On one
 * machine the image's OPENBLAS_CORETYPE=Haswell held OpenBLAS to AVX2 kernels: MLAS was 2-4× faster on mid-sized
 * products and 2× slower on the logits; unset, OpenBLAS's own kernels tripled its peak. Only a measurement knows.
 *
 * Shape classes (gemm-classes.ts): the transposes (nn, nt, tn, tt) × a size bucket of M·K·N (multiply-adds, in
 * steps of 8×: < 2¹⁸, < 2²¹, < 2²⁴, < 2²⁷, < 2³⁰, larger). The probe times one representative product of each class
 * through every runner that loads (XNNPACK only in the three small buckets: above them it is 4-10× slower, and
 * timing it would cost more than the rest), interleaved, the best of a few calls each, and picks the fastest;
 * ≈ 0.5-1 s in all on a 2-core VM. The dispatcher (makeDispatcher, gemm-dispatch.ts) then sends each product to its
 * class's runner; products below that runner's minMacs (minEntryMacs for one entry of a batched product) stay in
 * XNNPACK as before.
 *
 * Cache (gemm-probe-cache.ts): the choice is kept per machine in gemm-probe.json under $FROST_CACHE, else the OS
 * cache folder ($XDG_CACHE_HOME or ~/.cache on Linux)/frost, keyed by what the choice depends on: the CPU model and
 * ISA, each provider's description (OpenBLAS's version and core name), the thread count and the environment the
 * libraries read (OPENBLAS_*, OMP_*, GOMP_SPINCOUNT, FROST_BLAS). Any change there probes again. The file is written
 * atomically (a temporary sibling renamed over it), and a probe holds a lock file meanwhile, so the many processes
 * of a test suite probe once and then all make the same choice. A file that does not parse is ignored with a
 * warning and replaced. A cached choice is kept until its key changes, so that every run on a machine computes
 * the same way (cached test fixtures are compared bit for bit with fresh runs); FROST_GEMM_PROBE=refresh measures
 * again and replaces it (bench:train does, at its start). The load average per core at the probe is recorded and
 * shown: a probe taken on a busy machine (threads waiting for a busy core made OpenBLAS look 20-70× slower than it
 * is, ≈ 6 ms a call) is worth refreshing when it is quiet.
 */
import { availableParallelism, loadavg } from 'node:os';
import { probeClasses, type ClassChoice, type ProbeCandidate, type TimeProduct } from './gemm-classes.ts';
import {
  keyHash,
  probeCacheFile,
  probeKey,
  readCache,
  withProbeLock,
  writeCache,
  type ProbeKey,
} from './gemm-probe-cache.ts';
import type { GemmProviderName, NativeGemm } from './native-gemm.ts';

/** bench/train-speed.ts records the CPU's ISA beside its timings. */
export { cpuIsa } from './gemm-probe-cache.ts';

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
