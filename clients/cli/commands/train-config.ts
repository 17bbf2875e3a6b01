import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { DEFAULT_IMAGE_SPEC } from '../../../core/image/preprocess.ts';
import { isSubwordKind, SUBWORD_KINDS } from '../../../core/subword/subword-spec.ts';
import { getLmArch, resolveArchConfig, resolveHeadOptions } from '../../../models/index.ts';
import { detectCorpusKind, DEFAULT_LANGS } from '../../../train/data/corpus.ts';
import { describeFrozenEncoder, encoderDigest } from '../../../train/data/image-features.ts';
import { recipeWithDefaults, resolveRecipe, type RecipeFlags } from '../../../train/recipe.ts';
import { runConfigSchema, RUN_FILES, type RunConfig, type TaskName } from '../../../train/run-config.ts';

/** `frost train` flags that make a new run's config (see train.ts for their help). */
export interface NewRunFlags extends RecipeFlags {
  task: TaskName;
  arch?: string;
  head: string;
  /** Required but for --task lm, whose default corpus is Multi30k English + Flickr8k captions. */
  data?: string;
  src?: string;
  tgt?: string;
  preset: string;
  set: Record<string, unknown>;
  headOption: Record<string, unknown>;
  epochs?: number;
  maxMinutes?: number;
  maxUpdates?: number;
  /** Minutes between saves of `last` inside an epoch. */
  checkpointMinutes?: number;
  seed: number;
  batchSize?: number;
  minFreq?: number;
  /** 'word' (default), 'bpe' or 'unigram'. */
  vocab?: string;
  /** word: cap on the vocabulary; bpe, unigram: pieces per model. */
  vocabSize?: number;
  jointVocab?: boolean;
  /** bpe, unigram: keep pieces the training targets never use in the output softmax (excluded by default). */
  keepUnseenOutputs?: boolean;
  smoothSeenOnly?: boolean;
  valSentences?: number;
  encoder?: string;
  encoderOutput?: string;
  imageSize?: number;
  imageCache?: string;
  /** lm: tokens per truncated-BPTT window. */
  bptt?: number;
  /** lm, one-file corpora: "valid,test" fractions. */
  split?: string;
}

/** Where `--encoder`'s file is copied in the run folder, so resume and export need nothing outside it. */
const FROZEN_ENCODER_FILE = 'frozen-encoder.onnx';

/** What the new run's config is built from besides the flags. */
interface ConfigContext {
  arch: string;
  runDir: string;
  subword: boolean;
  /** The `vocab` field for a word minimum frequency (the task's default when undefined). */
  vocab(minFreq: number | undefined): Record<string, unknown>;
}

/** How `frost train` makes a task's new run: its default architecture and corpus, and its config from the flags. */
interface TaskFlags {
  /** The architecture the task trains unless told otherwise. */
  defaultArch: string;
  /** The task trains on a default corpus when `--data` is not given. */
  defaultData?: boolean;
  runConfig(flags: NewRunFlags, context: ConfigContext): Promise<RunConfig> | RunConfig;
}

/** Each task's new-run flags, by task (train/tasks/ registers their training side). */
const TASK_FLAGS: Readonly<Record<TaskName, TaskFlags>> = {
  translation: { defaultArch: 'rnn-attn', runConfig: translationRunConfig },
  caption: { defaultArch: 'show-attend-tell', runConfig: captionRunConfig },
  lm: { defaultArch: 'lstm-lm', defaultData: true, runConfig: lmRunConfig },
};

/**
 * A new run's config from the flags; unset flags take the task's defaults from the schema (the
 * paper's: translation lr 1e-3, batch 64, min frequency 2; captioning lr 4e-4, batch 32, min
 * frequency 5). For `--encoder`, the ONNX file is described and copied into `runDir`.
 */
export async function newRunConfig(flags: NewRunFlags, runDir: string): Promise<RunConfig> {
  const task = TASK_FLAGS[flags.task];
  if (!flags.data && !task.defaultData) throw new Error('give --data DIR (see `frost data --help` to get a corpus)');
  const arch = flags.arch ?? task.defaultArch;
  const kindOfVocab = flags.vocab ?? 'word';
  const subword = isSubwordKind(kindOfVocab);
  if (kindOfVocab !== 'word' && !subword)
    throw new Error(`--vocab ${flags.vocab}: expected word, ${SUBWORD_KINDS.join(' or ')}`);
  const subwordFlag = `--vocab ${SUBWORD_KINDS.join('|')}`;
  if (flags.jointVocab && !subword) throw new Error(`--joint-vocab needs ${subwordFlag}`);
  if (flags.jointVocab && flags.task !== 'translation') throw new Error('--joint-vocab is for --task translation');
  if (flags.keepUnseenOutputs && (!subword || flags.task !== 'translation'))
    throw new Error(`--keep-unseen-outputs is for --task translation with ${subwordFlag}`);
  if (flags.smoothSeenOnly && (!subword || flags.task !== 'translation' || flags.keepUnseenOutputs))
    throw new Error(`--smooth-seen-only is for --task translation with ${subwordFlag}, unseen pieces excluded`);
  if (subword && flags.minFreq !== undefined) throw new Error('--min-freq is for word vocabularies (--vocab word)');
  const vocab = (minFreq: number | undefined): Record<string, unknown> =>
    subword
      ? {
          kind: kindOfVocab,
          size: flags.vocabSize ?? 8000,
          joint: flags.jointVocab ?? false,
          // A new translation run scores only the pieces its targets use (compactOutput); older runs' config.json
          // files lack the field and keep their full-size output layers.
          ...(flags.keepUnseenOutputs
            ? { maskUnseen: false }
            : flags.task === 'translation'
              ? { compactOutput: true, ...(flags.smoothSeenOnly ? { smoothSeenOnly: true } : {}) }
              : {}),
        }
      : {
          kind: 'word',
          ...(minFreq !== undefined ? { minFreq } : {}),
          ...(flags.vocabSize !== undefined ? { maxSize: flags.vocabSize } : {}),
        };
  // Checked here so a mistyped --head-option is refused before any data is read.
  resolveHeadOptions(flags.head, flags.headOption);
  return task.runConfig(flags, { arch, runDir, subword, vocab });
}

/** The settings translation and captioning runs share, after refusing the language model's flags. */
function seq2seqCommon(flags: NewRunFlags, arch: string) {
  for (const [flag, value] of [
    ['--bptt', flags.bptt],
    ['--split', flags.split],
  ] as const) {
    if (value !== undefined) throw new Error(`${flag} is for --task lm`);
  }
  if (flags.data === undefined) throw new Error('give --data DIR (see `frost data --help` to get a corpus)');
  const dataDir = resolve(flags.data);
  // The recipe: flags, else the architecture's defaults (ArchDefinition.recipe), else the task's.
  const { maxTokens, ...recipe } = resolveRecipe(arch, flags);
  const common = {
    arch,
    preset: flags.preset,
    archConfig: resolveArchConfig(arch, flags.preset, flags.set),
    head: { name: flags.head, options: flags.headOption },
    seed: flags.seed,
    ...recipe,
    epochs: flags.epochs,
    maxMinutes: flags.maxMinutes,
    maxUpdates: flags.maxUpdates,
    ...(flags.checkpointMinutes !== undefined ? { checkpointMinutes: flags.checkpointMinutes } : {}),
    valSentences: flags.valSentences,
  };
  return { dataDir, maxTokens, common };
}

/** A translation run's config: a parallel corpus, its languages, tokeniser and batches. */
function translationRunConfig(flags: NewRunFlags, { arch, subword, vocab }: ConfigContext): RunConfig {
  const { dataDir, maxTokens, common } = seq2seqCommon(flags, arch);
  for (const [flag, value] of [
    ['--encoder', flags.encoder],
    ['--image-size', flags.imageSize],
    ['--image-cache', flags.imageCache],
  ] as const) {
    if (value !== undefined) throw new Error(`${flag} is for --task caption`);
  }
  const kind = detectCorpusKind(dataDir);
  return runConfigSchema.parse({
    task: 'translation',
    ...common,
    data: {
      dir: dataDir,
      kind,
      src: flags.src ?? DEFAULT_LANGS[kind].src,
      tgt: flags.tgt ?? DEFAULT_LANGS[kind].tgt,
    },
    tokenizer: subword ? 'sentencepiece' : kind === 'plain' ? 'whitespace' : 'multi30k',
    vocab: vocab(flags.minFreq ?? (kind === 'plain' ? 1 : 2)),
    // With --max-tokens alone no sentence cap applies (fairseq's): a batch of n sentences has n tokens or more.
    batch: { maxSentences: flags.batchSize ?? maxTokens ?? 64, ...(maxTokens !== undefined ? { maxTokens } : {}) },
  });
}

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

/** A language-model run's config (train/lm/): a corpus or the default one, streams and BPTT window. */
function lmRunConfig(flags: NewRunFlags, { arch, subword, vocab }: ConfigContext): RunConfig {
  for (const [flag, value] of [
    ['--src', flags.src],
    ['--tgt', flags.tgt],
    ['--encoder', flags.encoder],
    ['--image-size', flags.imageSize],
    ['--image-cache', flags.imageCache],
    ['--val-sentences', flags.valSentences],
    // The language-model loop (train/lm/) has no smoothing or token batches.
    ['--label-smoothing', flags.labelSmoothing],
    ['--max-tokens', flags.maxTokens],
  ] as const) {
    if (value !== undefined) throw new Error(`${flag} is not for --task lm`);
  }
  const { optim, schedule } = recipeWithDefaults({}, flags);
  let split: { valid: number; test: number } | undefined;
  if (flags.split !== undefined) {
    const [valid, test] = flags.split.split(',').map(Number);
    if (!(valid > 0 && valid < 0.5 && test > 0 && test < 0.5))
      throw new Error(`--split expects two fractions in (0, 0.5) as valid,test, got '${flags.split}'`);
    split = { valid, test };
  }
  return runConfigSchema.parse({
    task: 'lm',
    arch,
    preset: flags.preset,
    archConfig: resolveArchConfig(getLmArch(arch).name, flags.preset, flags.set),
    head: { name: flags.head, options: flags.headOption },
    seed: flags.seed,
    optim,
    schedule,
    epochs: flags.epochs,
    maxMinutes: flags.maxMinutes,
    maxUpdates: flags.maxUpdates,
    ...(flags.checkpointMinutes !== undefined ? { checkpointMinutes: flags.checkpointMinutes } : {}),
    data: { ...(flags.data !== undefined ? { dir: resolve(flags.data) } : {}), ...(split ? { split } : {}) },
    // Given corpora are taken as tokenised (PTB, WikiText); the default one is raw text.
    tokenizer: subword ? 'sentencepiece' : flags.data === undefined ? 'multi30k' : 'whitespace',
    vocab: vocab(flags.minFreq),
    batch: { streams: flags.batchSize ?? 20, bptt: flags.bptt ?? 35 },
    ...(flags.keepLast !== undefined ? { keepLast: flags.keepLast } : {}),
    ...(flags.emaDecay !== undefined ? { emaDecay: flags.emaDecay } : {}),
  });
}
