import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import type { ImageSpec } from '../../core/image/preprocess.ts';
import { isSubwordKind } from '../../core/subword/subword-spec.ts';
import { getTokenizer, type Tokenizer } from '../../core/text/tokenize.ts';
import type { Vocabulary } from '../../core/vocab.ts';
import type { ImageInputSpec } from '../../models/index.ts';
import { captionBleu4, type CaptionEvalSet } from '../caption-evaluate.ts';
import {
  makeCaptionBatch,
  planCaptionBatches,
  type EncodedCaptionImage,
  type ImageSource,
} from '../data/caption-batches.ts';
import {
  buildCaptionVocabulary,
  imagesOf,
  loadCaptionDataset,
  TRAINING_SPLITS,
  type CaptionDataset,
} from '../data/captions.ts';
import { encoderDigest, loadFeatureSource } from '../data/image-features.ts';
import { loadImageCache, normaliseBatch, type ImageCache } from '../data/image-cache.ts';
import { REPO_ROOT } from '../data/paths.ts';
import { RUN_FILES, type CaptionRunConfig } from '../run-config.ts';
import { readVocab, writeVocab } from '../run-folder.ts';
import { learnSubwords, runTokenizer } from '../subwords.ts';
import { registerTask } from './registry.ts';
import { seq2seqTask } from './seq2seq.ts';

/**
 * Captioning: a caption data set (train/data/captions.ts), its images decoded once into the image
 * cache, batches of whole images with all their captions (data/caption-batches.ts), and validation
 * BLEU-4 (coco-caption) of greedy captions of the first `valSentences` val images.
 */
registerTask(
  seq2seqTask<CaptionRunConfig>({
    name: 'caption',
    inputKind: 'image',
    async prepare(config, runDir, resuming, log) {
      const dataset = await loadCaptionDataset(config.data.dir);
      const vocabPath = join(runDir, RUN_FILES.tgtVocab);
      // Subword captions (`--vocab bpe|unigram`): a model learned from the raw training captions, cased as written.
      const subword = isSubwordKind(config.vocab.kind);
      let vocab: Vocabulary;
      let tokenizer: Tokenizer;
      if (resuming) {
        vocab = await readVocab(vocabPath);
        tokenizer = await runTokenizer(config, runDir, { en: vocab });
      } else if (subword) {
        const captions = imagesOf(dataset, TRAINING_SPLITS).flatMap((im) => im.captions);
        const learned = await learnSubwords(config.vocab, runDir, { en: captions });
        vocab = learned.vocabs.en!;
        tokenizer = learned.tokenizer;
      } else {
        vocab = buildCaptionVocabulary(dataset, { minFreq: config.vocab.minFreq });
        tokenizer = getTokenizer(config.tokenizer);
      }
      if (!resuming) await writeVocab(vocabPath, vocab);
      // BLEU-4 compares coco-caption words: subword output is detokenised first, then split as the references are.
      const words = getTokenizer('caption');
      const toWords = subword
        ? (pieces: string[]) => words.tokenize(tokenizer.detokenize(pieces, 'en'), 'en')
        : undefined;

      const spec: ImageSpec = config.image;
      const cacheDir = captionCacheDir(dataset, config.imageCache);
      let lastReport = 0;
      const progress = (what: string) => (done: number, total: number) => {
        if (Date.now() - lastReport < 10_000 && done < total) return;
        lastReport = Date.now();
        log(`${what}: ${done}/${total} images`);
      };
      const cache = await loadImageCache(dataset, {
        cacheDir,
        spec,
        onProgress: progress(`decoding images into ${cacheDir}`),
      });
      const { source, image } = await imageSource(
        config,
        runDir,
        cache,
        spec,
        cacheDir,
        progress('frozen encoder features'),
      );

      const tokenize = (text: string, lang: string) => tokenizer.tokenize(text, lang);
      const rowOf = (id: string) => {
        const row = cache.indexOf(id);
        if (row < 0) throw new Error(`image '${id}' is not in the image cache ${cacheDir}`);
        return row;
      };
      let dropped = 0;
      const train: EncodedCaptionImage[] = [];
      for (const im of imagesOf(dataset, TRAINING_SPLITS)) {
        const captions = im.captions
          .map((c) => vocab.encode(tokenize(c, 'en')))
          .filter((ids) => ids.length > 0 && ids.length <= config.lengths.maxTgtLen);
        dropped += im.captions.length - captions.length;
        if (captions.length > 0) train.push({ row: rowOf(im.id), captions });
      }
      if (train.length === 0)
        throw new Error(`${config.data.dir}: no training captions of at most ${config.lengths.maxTgtLen} words`);
      const valImages = imagesOf(dataset, ['val']).slice(0, config.valSentences);
      if (valImages.length === 0) throw new Error(`${config.data.dir}: no 'val' images to validate on`);
      const val: CaptionEvalSet = {
        rows: Int32Array.from(valImages.map((im) => rowOf(im.id))),
        refs: valImages.map((im) => im.captions.map((c) => words.tokenize(c, 'en'))),
      };
      const captions = train.reduce((n, im) => n + im.captions.length, 0);
      return {
        summary:
          `data: ${dataset.name}, ${train.length} training images with ${captions} captions (${dropped} longer than ${config.lengths.maxTgtLen} words or empty dropped), ` +
          `${val.rows.length} val images; vocab ${vocab.size} ${subword ? `${config.vocab.kind} pieces` : `(min frequency ${config.vocab.minFreq})`}; image input ${image.kind === 'pixels' ? `${image.size}²` : `[${image.shape.join(', ')}] frozen-encoder features`}`,
        sizes: { tgtVocab: vocab.size, image },
        epoch(epoch) {
          const plan = planCaptionBatches(train, { seed: config.seed, maxCaptions: config.batch.maxSentences }, epoch);
          return { length: plan.length, batch: (i) => makeCaptionBatch(train, plan[i], source) };
        },
        validate: (model) => captionBleu4(model, vocab, source, val, toWords),
      };
    },
  }),
);

/** Normalised pixels from the cache, or the frozen encoder's cached features. */
async function imageSource(
  config: CaptionRunConfig,
  runDir: string,
  cache: ImageCache,
  spec: ImageSpec,
  cacheDir: string,
  onProgress: (done: number, total: number) => void,
): Promise<{ source: ImageSource; image: ImageInputSpec }> {
  const { encoder } = config;
  if (encoder.kind === 'cnn') {
    return {
      source: { shape: [3, spec.size, spec.size], read: (rows) => normaliseBatch(cache, rows, spec) },
      image: { kind: 'pixels', size: spec.size },
    };
  }
  const path = join(runDir, encoder.file);
  const bytes = new Uint8Array(await readFile(path));
  if (encoderDigest(bytes) !== encoder.sha256)
    throw new Error(`${path}: the frozen encoder changed since the run started (SHA-256 differs from config.json)`);
  const source = await loadFeatureSource(bytes, { ...encoder, size: spec.size }, cache, spec, cacheDir, onProgress);
  return { source, image: { kind: 'features', shape: encoder.featureShape } };
}

/**
 * Where a run's images are cached: the config's `imageCache`, else under the checkout's git-ignored
 * data/cache, one folder per data set location (shared data is read-only, and runs share one cache).
 */
export function captionCacheDir(dataset: CaptionDataset, override?: string): string {
  if (override !== undefined) return override;
  const tag = createHash('sha256').update(resolve(dataset.dir)).digest('hex').slice(0, 8);
  return join(REPO_ROOT, 'data', 'cache', `${dataset.name || basename(dataset.dir)}-${tag}`);
}
