import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { DEFAULT_IMAGE_SPEC } from '../../../../core/image/preprocess.ts';
import { describeFrozenEncoder, encoderDigest } from '../../../../train/data/image-features.ts';
import { runConfigSchema, RUN_FILES, type RunConfig } from '../../../../train/run-config.ts';
import { registerNewRunTask } from './registry.ts';
import { seq2seqCommon } from './seq2seq.ts';
import type { ConfigContext, NewRunFlags } from './types.ts';

/** Where `--encoder`'s file is copied in the run folder, so resume and export need nothing outside it. */
const FROZEN_ENCODER_FILE = 'frozen-encoder.onnx';

/** A caption run's config: a caption data set, the image input and its encoder (a CNN, or `--encoder` frozen). */
async function captionRunConfig(
  flags: NewRunFlags,
  { arch, runDir, subword, vocab }: ConfigContext,
): Promise<RunConfig> {
  const { dataDir, common } = seq2seqCommon(flags, arch);
  if (flags.src !== undefined || flags.tgt !== undefined) throw new Error('--src and --tgt are for --task translation');
  if (flags.maxTokens !== undefined)
    throw new Error('--max-tokens is for --task translation (caption batches hold all captions of an image)');
  if (!existsSync(dataDir))
    throw new Error(
      `--data ${flags.data}: no such caption data set (a folder with dataset_<name>.json, or COCO annotations/)`,
    );
  let size = flags.imageSize ?? DEFAULT_IMAGE_SPEC.size;
  let encoder: Record<string, unknown> = { kind: 'cnn' };
  if (flags.encoder !== undefined) {
    // Checked before the copy below, which would otherwise replace an existing run's encoder.
    if (existsSync(join(runDir, RUN_FILES.config)))
      throw new Error(`${runDir} already holds a run; use --resume ${runDir} to continue it, or choose another --out`);
    const path = resolve(flags.encoder);
    const bytes = new Uint8Array(await readFile(path));
    const info = await describeFrozenEncoder(bytes, path, { output: flags.encoderOutput, size: flags.imageSize });
    size = info.size;
    await mkdir(runDir, { recursive: true });
    await copyFile(path, join(runDir, FROZEN_ENCODER_FILE));
    encoder = {
      kind: 'onnx',
      file: FROZEN_ENCODER_FILE,
      sha256: encoderDigest(bytes),
      input: info.input,
      output: info.output,
      featureShape: info.featureShape,
    };
  } else if (flags.encoderOutput !== undefined) {
    throw new Error('--encoder-output needs --encoder');
  }
  return runConfigSchema.parse({
    task: 'caption',
    ...common,
    data: { dir: dataDir },
    tokenizer: subword ? 'sentencepiece' : 'caption',
    vocab: vocab(flags.minFreq),
    ...(flags.batchSize !== undefined ? { batch: { maxSentences: flags.batchSize } } : {}),
    image: { size, mean: [...DEFAULT_IMAGE_SPEC.mean], std: [...DEFAULT_IMAGE_SPEC.std] },
    encoder,
    ...(flags.imageCache !== undefined ? { imageCache: resolve(flags.imageCache) } : {}),
  });
}

registerNewRunTask({ task: 'caption', defaultArch: 'show-attend-tell', runConfig: captionRunConfig });
