/**
 * The per-machine cache of the GEMM probe's choice (gemm-probe.ts): gemm-probe.json under $FROST_CACHE, else the OS
 * cache folder ($XDG_CACHE_HOME or ~/.cache on Linux)/frost, one entry per key (probeKey: what the choice depends
 * on). Written atomically (a temporary sibling renamed over it); a lock file held while one process probes makes
 * the others wait for its result instead of probing too.
 */
import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { arch, cpus, homedir, platform } from 'node:os';
import { dirname, join } from 'node:path';
import { tmpSibling } from '../../atomic-write.ts';
import type { ClassChoice } from './gemm-classes.ts';
import type { NativeGemm } from './native-gemm.ts';

/** Bumped when the classes or the probe change: older cache entries are then not used. */
export const PROBE_VERSION = 1;

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

export const keyHash = (key: ProbeKey) => createHash('sha256').update(JSON.stringify(key)).digest('hex').slice(0, 20);

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

export interface CacheEntry {
  key: ProbeKey;
  probedAt: string;
  /** The 1-minute load average per core when the probe ran. */
  loadPerCore?: number;
  classes: ClassChoice[];
}

export interface CacheFile {
  version: number;
  entries: Record<string, CacheEntry>;
}

/** The cache's entries, or none (with a warning) when the file is there but damaged. */
export function readCache(file: string, warn: (line: string) => void): CacheFile {
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

export function writeCache(file: string, cache: CacheFile): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = tmpSibling(file);
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
export function withProbeLock<T>(file: string, reread: () => T | null, fn: () => T, waitMs = 30_000): T {
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
