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
  const named = GEMM_PROVIDERS.filter((p) => which === 'auto' || p.name === which);
  const { runners, reasons } = loadProviders(named, threads, true);
  if (runners.length > 0) return runners[0];
  return new Error(reasons.length === 0 ? `no GEMM provider named '${which}'` : reasons.join('; '));
}

/** The runner of every provider that loads (the per-shape probe times them all); an Error when none does. */
export function loadAllNativeGemms(threads: number): NativeGemm[] | Error {
  const { runners, reasons } = loadProviders(GEMM_PROVIDERS, threads, false);
  return runners.length > 0 ? runners : new Error(reasons.join('; '));
}

/** Loads the providers in order (up to the first that loads, with `firstOnly`), and why each that failed did. */
function loadProviders(
  providers: readonly GemmProvider[],
  threads: number,
  firstOnly: boolean,
): { runners: NativeGemm[]; reasons: string[] } {
  const runners: NativeGemm[] = [];
  const reasons: string[] = [];
  for (const provider of providers) {
    const loaded = provider.load(threads);
    if (loaded instanceof Error) reasons.push(`${provider.name}: ${loaded.message.split('\n')[0]}`);
    else {
      runners.push(loaded);
      if (firstOnly) break;
    }
  }
  return { runners, reasons };
}
