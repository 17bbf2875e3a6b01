import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { decodeImage } from '../core/image/decode-node.ts';
import { preprocessRgba } from '../core/image/preprocess.ts';
import { SeededRandom } from '../core/random.ts';
import type { Tokenizer } from '../core/text/tokenize.ts';
import type { Vocabulary } from '../core/vocab.ts';
import { imagesOf, loadCaptionDataset } from '../train/data/captions.ts';
import { encoderDigest } from '../train/data/image-features.ts';
import type { CaptionRunConfig } from '../train/run-config.ts';
import type { RunFolder } from '../train/run-folder.ts';
import { mergeFrozenEncoder, onnxOpset } from './merge-encoder.ts';
import type { ParityInputs } from './parity.ts';
import { seq2seqExport } from './seq2seq-export.ts';
import { registerTaskExport, type ExportParts } from './task-parts.ts';
import { createNodeSession, ort } from '../core/runtime/ort-node.ts';

/** Name of the model encoder's input when a frozen encoder's features feed it (models/layers/feature-encoder.ts). */
const FEATURES_INPUT = 'features';
const PIXELS_INPUT = 'pixels';

/**
 * Captioning: the caption vocabulary, the image spec in the card, images for parity and, with a
 * frozen encoder (`--encoder`), its graph merged in front of the model's encoder.
 */
export async function captionExportParts(run: RunFolder<CaptionRunConfig>): Promise<ExportParts> {
  const { config, dir: runDir } = run;
  const vocab = await run.vocab('tgt');
  const tokenizer = await run.tokenizer({ en: vocab });
  const subwords = await run.subwords(['en']);
  const { encoder } = config;
  let foreign: Uint8Array | undefined;
  if (encoder.kind === 'onnx') {
    const path = join(runDir, encoder.file);
    foreign = new Uint8Array(await readFile(path));
    if (encoderDigest(foreign) !== encoder.sha256)
      throw new Error(`${path}: the frozen encoder changed since training (SHA-256 differs from config.json)`);
  }
  const frozen =
    foreign && encoder.kind === 'onnx' ? { bytes: foreign, output: encoder.output, input: encoder.input } : undefined;
  return {
    sizes: {
      tgtVocab: vocab.size,
      image:
        encoder.kind === 'onnx'
          ? { kind: 'features', shape: encoder.featureShape }
          : { kind: 'pixels', size: config.image.size },
    },
    encoderOpset: frozen ? onnxOpset(frozen.bytes) : undefined,
    finishEncoder: frozen
      ? (bytes) => ({
          bytes: mergeFrozenEncoder(frozen.bytes, frozen.output, bytes, FEATURES_INPUT, PIXELS_INPUT),
          inputs: [PIXELS_INPUT],
        })
      : undefined,
    parityInputs: async (count) => {
      const { pixels, targets, synthetic } = await paritySamples(config, tokenizer, vocab, count);
      const n = targets.length;
      const { size } = config.image;
      const pixelShape = [n, 3, size, size];
      // tfjs reads what the model's own encoder reads: pixels, or the frozen encoder's features of them.
      let images = pixels;
      let shape = pixelShape;
      if (frozen) {
        const session = await createNodeSession(frozen.bytes);
        const out = await session.run({ [frozen.input]: new ort.Tensor('float32', pixels, pixelShape) }, [
          frozen.output,
        ]);
        const features = out[frozen.output] as ort.Tensor;
        images = features.data as Float32Array;
        shape = [...features.dims].map(Number);
        await session.release();
      }
      const inputs: ParityInputs = {
        tfjs: () => ({ kind: 'image', images: tf.tensor(images, shape, 'float32') }),
        onnx: { [PIXELS_INPUT]: new ort.Tensor('float32', pixels, pixelShape) },
        targets,
        ...(synthetic === undefined ? {} : { synthetic }),
      };
      return inputs;
    },
    card: {
      task: 'caption',
      target: { lang: 'en', tokens: vocab.toJSON() },
      tokenizer: config.tokenizer,
      ...(subwords ? { subword: subwords.spec } : {}),
      image: config.image,
      data: { dataset: basename(config.data.dir) },
      extra: {
        encoder:
          encoder.kind === 'onnx'
            ? { kind: 'onnx', sha256: encoder.sha256, output: encoder.output, featureShape: encoder.featureShape }
            : { kind: 'cnn' },
      },
    },
    files: subwords?.files ?? {},
    // The fp16/int8 BLEU comparison is translation's; a caption export records the log-prob drift only.
    precisionPairs: async () => [],
  };
}

/**
 * Images and captions for the parity check: the first val images of the run's data set, decoded and
 * preprocessed as a client would, with their first caption; or, when the data set is not on this
 * machine, seeded random pixels and words (parity needs inputs, not meaning).
 */
async function paritySamples(
  config: CaptionRunConfig,
  tokenizer: Tokenizer,
  vocab: Vocabulary,
  count: number,
): Promise<{ pixels: Float32Array; targets: Int32Array[]; synthetic?: string }> {
  const plane = 3 * config.image.size * config.image.size;
  try {
    const dataset = await loadCaptionDataset(config.data.dir);
    const images = imagesOf(dataset, ['val']).slice(0, count);
    if (images.length === 0) throw new Error('no val images');
    const pixels = new Float32Array(images.length * plane);
    for (const [i, im] of images.entries()) {
      const { rgba, width, height } = await decodeImage(im.path);
      pixels.set(preprocessRgba(rgba, width, height, config.image), i * plane);
    }
    return { pixels, targets: images.map((im) => vocab.encode(tokenizer.tokenize(im.captions[0]!, 'en'))) };
  } catch (err) {
    const rng = new SeededRandom(config.seed, 'parity-samples');
    const pixels = Float32Array.from({ length: count * plane }, () => rng.normal());
    const targets = Array.from({ length: count }, () =>
      Int32Array.from({ length: 3 + rng.int(10) }, () => 4 + rng.int(vocab.size - 4)),
    );
    const synthetic = `the data set could not be read (${err instanceof Error ? err.message : String(err)})`;
    return { pixels, targets, synthetic };
  }
}

registerTaskExport('caption', seq2seqExport(captionExportParts));
