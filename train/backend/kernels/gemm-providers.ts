/**
 * The native GEMM providers (native-gemm.ts describes the contract). By default every one that loads is timed per
 * shape class and the fastest runs each class (gemm-probe.ts); the order here is only FROST_NATIVE_GEMM=first's. A
 * new one is a file that exports a GemmProvider, plus its line here.
 */
import { blasProvider } from './gemm-blas.ts';
import { mlasProvider } from './gemm-mlas.ts';
import type { GemmProvider, GemmProviderName, NativeGemm } from './native-gemm.ts';

export const GEMM_PROVIDERS: readonly GemmProvider[] = [blasProvider, mlasProvider];

/**
 * The runner of the provider named, or of the first in GEMM_PROVIDERS that loads ('auto'); an
 * Error listing why each one tried did not.
 */
export function loadNativeGemm(threads: number, which: 'auto' | GemmProviderName = 'auto'): NativeGemm | Error {
  const reasons: string[] = [];
  for (const provider of GEMM_PROVIDERS) {
    if (which !== 'auto' && provider.name !== which) continue;
    const loaded = provider.load(threads);
    if (!(loaded instanceof Error)) return loaded;
    reasons.push(`${provider.name}: ${loaded.message.split('\n')[0]}`);
  }
  return new Error(reasons.length === 0 ? `no GEMM provider named '${which}'` : reasons.join('; '));
}
