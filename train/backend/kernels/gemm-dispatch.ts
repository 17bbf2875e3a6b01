/**
 * The per-shape-class dispatcher (gemm-probe.ts chooses, this runs): a NativeGemm that sends each product to the
 * runner its class's probe chose. It runs on every matrix product of a training step, so everything a call needs is
 * looked up in flat arrays built once here.
 */
import { BUCKET_LIMITS, sizeBucket } from './gemm-classes.ts';
import { choiceSummary, type GemmChoiceRecord } from './gemm-probe.ts';
import type { NativeGemm } from './native-gemm.ts';

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
  // Per slot, the smallest product its runner takes (Infinity: left to XNNPACK, or a class the record lacks).
  const minMacs = chosen.map((r) => r?.minMacs ?? Infinity);
  const minEntryMacs = chosen.map((r) => r?.minEntryMacs ?? Infinity);
  const threads = Math.max(...runners.map((r) => r.threads));
  const pool = used.length > 0 ? used : runners;
  const batched = runners.find((r) => r.batched != null)?.batched;
  return {
    provider: 'probe',
    threads,
    choice: record,
    kernel: runners.flatMap((r) => (r.kernel != null ? [r.kernel] : [])).join('; ') || undefined,
    minMacs: Math.min(...pool.map((r) => r.minMacs)),
    minEntryMacs: Math.min(...pool.map((r) => r.minEntryMacs)),
    description:
      `per shape class, probed (${record.source === 'cache' ? 'cached' : 'measured now'}` +
      `${record.loadPerCore > 1 ? `, under load ${record.loadPerCore} a core` : ''}): ${choiceSummary(record)}; ` +
      runners.map((r) => r.description).join('; '),
    accepts(M, K, N, tA, tB, batched) {
      const macs = M * K * N;
      const i = slot(tA, tB, sizeBucket(macs));
      return macs >= (batched ? minEntryMacs[i] : minMacs[i]);
    },
    // One runner's batched call serves every batched product: it replaces a call per entry, whatever their class.
    ...(batched != null ? { batched } : {}),
    gemm(A, B, Y, M, K, N, tA, tB) {
      // A class left to XNNPACK only comes here when a caller ignores accepts (bench:gemm forces every runner).
      (chosen[slot(tA, tB, sizeBucket(M * K * N))] ?? fallback).gemm(A, B, Y, M, K, N, tA, tB);
    },
    dispose() {
      for (const r of runners) r.dispose();
    },
  };
}
