/**
 * The constants of the frost-head custom layers (frost-heads.ts), without tfjs, so the converter
 * (export/convert/layers/frost-heads.ts) can share them without importing tfjs-layers.
 */
export type FrostFixedKind = 'fixed-uniform' | 'fixed-l2';
export const FROST_FIXED_KINDS: readonly FrostFixedKind[] = ['fixed-uniform', 'fixed-l2'];
/** The `fixed-uniform` head's default limit (models/heads/fixed-uniform.ts). */
export const DEFAULT_FIXED_LIMIT = 10;
/** Added to ‖f‖² before the square root, as models/heads/hadamard.ts does. */
export const HADAMARD_EPS = 1e-12;
