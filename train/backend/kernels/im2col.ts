/**
 * im2col / col2im for NHWC 2-D convolutions, the data movement that turns a convolution's two
 * gradients into GEMMs (conv2d-backprop-filter.ts, conv2d-backprop-input.ts).
 *
 * cols is [N, K] with N = batch·outH·outW output positions (row-major b, y, x) and K = kh·kw·C
 * (row-major ky, kx, c): the layout of a tfjs filter [kh, kw, C, out] flattened to [K, out], so
 *   y   = cols · W          (the forward convolution)
 *   dW  = colsᵀ · dy        (Conv2DBackpropFilter)
 *   dx  = col2im(dy · Wᵀ)   (Conv2DBackpropInput)
 * Taps that fall in the padding are zeros in cols and are skipped by col2im.
 */
import type { backend_util } from '@tensorflow/tfjs-core';

/** The parts of tfjs's Conv2DInfo these loops use. */
export type ConvGeometry = Pick<
  backend_util.Conv2DInfo,
  | 'batchSize'
  | 'inHeight'
  | 'inWidth'
  | 'inChannels'
  | 'outHeight'
  | 'outWidth'
  | 'filterHeight'
  | 'filterWidth'
  | 'strideHeight'
  | 'strideWidth'
  | 'dilationHeight'
  | 'dilationWidth'
  | 'padInfo'
>;

/** Channel runs shorter than this are copied element by element: subarray + set costs more for them. */
const MIN_BLOCK_COPY = 16;

export function colsShape(g: ConvGeometry): [number, number] {
  return [g.batchSize * g.outHeight * g.outWidth, g.filterHeight * g.filterWidth * g.inChannels];
}

/** cols [N, K] from x [batch, inH, inW, C]. */
export function im2col(x: Float32Array, cols: Float32Array, g: ConvGeometry): void {
  const C = g.inChannels;
  const K = g.filterHeight * g.filterWidth * C;
  const rowStride = g.inWidth * C;
  const imageStride = g.inHeight * rowStride;
  let row = 0;
  for (let b = 0; b < g.batchSize; b++) {
    for (let oy = 0; oy < g.outHeight; oy++) {
      for (let ox = 0; ox < g.outWidth; ox++, row += K) {
        let dst = row;
        for (let ky = 0; ky < g.filterHeight; ky++) {
          const iy = oy * g.strideHeight - g.padInfo.top + ky * g.dilationHeight;
          for (let kx = 0; kx < g.filterWidth; kx++, dst += C) {
            const ix = ox * g.strideWidth - g.padInfo.left + kx * g.dilationWidth;
            if (iy < 0 || iy >= g.inHeight || ix < 0 || ix >= g.inWidth) {
              cols.fill(0, dst, dst + C);
              continue;
            }
            const src = b * imageStride + iy * rowStride + ix * C;
            if (C >= MIN_BLOCK_COPY) cols.set(x.subarray(src, src + C), dst);
            else for (let c = 0; c < C; c++) cols[dst + c] = x[src + c];
          }
        }
      }
    }
  }
}

/** dx [batch, inH, inW, C] = Σ over the taps that read each input element of cols [N, K] (overwrites dx). */
export function col2im(cols: Float32Array, dx: Float32Array, g: ConvGeometry): void {
  dx.fill(0);
  const C = g.inChannels;
  const K = g.filterHeight * g.filterWidth * C;
  const rowStride = g.inWidth * C;
  const imageStride = g.inHeight * rowStride;
  let row = 0;
  for (let b = 0; b < g.batchSize; b++) {
    for (let oy = 0; oy < g.outHeight; oy++) {
      for (let ox = 0; ox < g.outWidth; ox++, row += K) {
        let src = row;
        for (let ky = 0; ky < g.filterHeight; ky++) {
          const iy = oy * g.strideHeight - g.padInfo.top + ky * g.dilationHeight;
          for (let kx = 0; kx < g.filterWidth; kx++, src += C) {
            const ix = ox * g.strideWidth - g.padInfo.left + kx * g.dilationWidth;
            if (iy < 0 || iy >= g.inHeight || ix < 0 || ix >= g.inWidth) continue;
            const dst = b * imageStride + iy * rowStride + ix * C;
            for (let c = 0; c < C; c++) dx[dst + c] += cols[src + c];
          }
        }
      }
    }
  }
}
