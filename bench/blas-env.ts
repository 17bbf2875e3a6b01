/**
 * The environment variables that pin OpenBLAS to kernels and cache sizes other than the CPU's own. An image may set
 * them (this project's sets Haswell kernels and a 512 KB L2); a peer run at its best runs without them, so that its
 * OpenBLAS picks the kernels of the CPU it is on. frost's own environment is left as it is.
 */
export const IMAGE_BLAS_ENV = ['OPENBLAS_CORETYPE', 'OPENBLAS_L2_SIZE'] as const;
