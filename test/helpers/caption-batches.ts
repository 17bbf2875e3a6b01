import { SeededRandom } from '../../core/random.ts';
import type { ImageBatch } from '../../models/index.ts';

/**
 * Random image batches whose captions depend on the image: each image gets a class (0..3) that
 * shifts its pixel mean, and its captions start with that class's word, so a model can learn
 * something from the pixels within a few steps. Ids 0..3 are the specials (pad, unk, <s>, </s>).
 */
export function syntheticImageBatch(
  seed: number,
  opts: { images: number; captionsPerImage: number; size: number; vocab: number; maxLen: number },
): ImageBatch {
  const rng = new SeededRandom(seed, 'caption-batch');
  const { images: I, captionsPerImage: K, size, vocab, maxLen } = opts;
  const pixels = new Float32Array(I * 3 * size * size);
  const classes = Array.from({ length: I }, () => rng.int(4));
  for (let i = 0; i < I; i++) {
    const shift = classes[i] - 1.5;
    for (let j = 0; j < 3 * size * size; j++) pixels[i * 3 * size * size + j] = rng.normal() * 0.5 + shift;
  }
  const captions: number[][] = [];
  const imageRows: number[] = [];
  for (let i = 0; i < I; i++) {
    for (let k = 0; k < K; k++) {
      const len = 1 + rng.int(maxLen - 1);
      captions.push([4 + classes[i], ...Array.from({ length: len - 1 }, () => 8 + rng.int(vocab - 8))]);
      imageRows.push(i);
    }
  }
  const B = captions.length;
  const T = Math.max(...captions.map((c) => c.length)) + 1;
  const tgtIn = new Int32Array(B * T);
  const tgtOut = new Int32Array(B * T);
  const tgtMask = new Float32Array(B * T);
  let tokens = 0;
  captions.forEach((c, b) => {
    const input = [2, ...c];
    const output = [...c, 3];
    for (let t = 0; t < output.length; t++) {
      tgtIn[b * T + t] = input[t];
      tgtOut[b * T + t] = output[t];
      tgtMask[b * T + t] = 1;
      tokens++;
    }
  });
  return {
    B,
    T,
    tgtIn,
    tgtOut,
    tgtMask,
    tokens,
    images: pixels,
    imageShape: [3, size, size],
    imageCount: I,
    imageRows: Int32Array.from(imageRows),
  };
}
