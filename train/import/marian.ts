/**
 * `frost import marian DIR --out RUN`: a Hugging Face Marian folder (Helsinki-NLP/opus-mt-*, as published:
 * config.json, model.safetensors, source.spm, target.spm, vocab.json, and generation_config.json and
 * tokenizer_config.json where present) as a frost run folder, which `frost export`, `translate`, `serve`, the page and
 * `report` take like any Transformer run. docs/import.md says what is supported and what is refused.
 *
 * Marian's conventions are settings of frost's Transformer: post-norm layers, swish (or GELU/ReLU) feed-forward
 * blocks, the embedding scale (`scale_embedding`), frost's sinusoidal positions (Marian's layout: sin in the first
 * half, cos in the second, from position 0), one embedding matrix for source, target and output (the `tied` head),
 * whose bias is `final_logits_bias`. Its tokenisation is core/subword/marian-tokenizer.ts.
 *
 * frost's vocabulary keeps `<pad>`, `<unk>`, `<s>`, `</s>` at ids 0-3, so the import reorders Marian's ids: frost id
 * 0 is Marian's pad, 1 its unk, 3 its eos, 4… the other tokens in Marian's order, and id 2 (`<s>`, where frost's
 * decoder starts) holds the embedding row of Marian's decoder_start_token_id (its pad), a row Marian never predicts:
 * its count is 0, so the output layer pins its logit far below the rest (train/output-support.ts) and the softmax is
 * Marian's. Search never emits `<pad>` (Marian's bad_words_ids) nor `<s>`.
 *
 * Everything read is input from strangers: every file is checked, and a wrong shape, a missing or extra tensor or a
 * config that contradicts the tensors is refused with one line naming the key and both shapes, before anything is
 * written. The run folder is written whole under a temporary name and renamed into place (train/atomic-write.ts).
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import type { SafetensorsFile } from '../../core/safetensors/node-file.ts';
import { MARIAN_EOS, MarianSentencePiece, MARIAN_TOKENIZER } from '../../core/subword/marian-tokenizer.ts';
import { SPECIALS, Vocabulary } from '../../core/vocab.ts';
import type { CheckpointTensor } from '../checkpoint.ts';
import { translationConfigSchema, type ImportedProvenance, type TranslationRunConfig } from '../run-config.ts';
import {
  checkImplied,
  decodeFinite,
  fileHash,
  ImportRefused,
  parseWith,
  readCheckedSafetensors,
  readJsonFile,
  shapeText,
  size,
  writeImportedRun,
} from './import-files.ts';
import { ExpectedShapes, reorderRows, TensorMapper } from './transformer-tensors.ts';

export interface MarianImportOptions {
  /** The Hugging Face folder. */
  from: string;
  /** The run folder to write; it must not exist yet. */
  out: string;
  /** Source and target languages, when tokenizer_config.json does not say them. */
  src?: string;
  tgt?: string;
  /** A corpus for export's parity and precision checks (`data.dir` of the run config); none: synthetic inputs. */
  data?: { dir: string; kind: 'multi30k' | 'plain' };
}

export interface MarianImportResult {
  out: string;
  config: TranslationRunConfig;
  /** frost's vocabulary size: Marian's plus the `<s>` row. */
  vocabSize: number;
  parameters: number;
}

/** What frost reads of config.json (MarianConfig); other fields are kept in the provenance only. */
const marianConfigSchema = z.looseObject({
  model_type: z.literal('marian'),
  d_model: size(),
  encoder_layers: size(),
  decoder_layers: size(),
  encoder_attention_heads: size(),
  decoder_attention_heads: size(),
  encoder_ffn_dim: size(),
  decoder_ffn_dim: size(),
  activation_function: z.string().default('gelu'),
  vocab_size: size(),
  decoder_vocab_size: size().nullish(),
  max_position_embeddings: size().default(1024),
  scale_embedding: z.boolean().default(false),
  pad_token_id: z.number().int().nonnegative(),
  eos_token_id: z.number().int().nonnegative(),
  decoder_start_token_id: z.number().int().nonnegative(),
  share_encoder_decoder_embeddings: z.boolean().default(true),
  tie_word_embeddings: z.boolean().default(true),
  normalize_before: z.boolean().default(false),
  normalize_embedding: z.boolean().default(false),
  static_position_embeddings: z.boolean().default(true),
  add_final_layer_norm: z.boolean().default(false),
  bad_words_ids: z.array(z.array(z.number().int())).nullish(),
});
type MarianConfig = z.infer<typeof marianConfigSchema>;

const generationSchema = z.looseObject({
  bad_words_ids: z.array(z.array(z.number().int())).nullish(),
  decoder_start_token_id: z.number().int().nullish(),
  eos_token_id: z.union([z.number().int(), z.array(z.number().int())]).nullish(),
  pad_token_id: z.number().int().nullish(),
});

/** Hugging Face's activation names and frost's Transformer setting for each (ACT2FN). */
const ACTIVATIONS: Readonly<Record<string, 'swish' | 'gelu' | 'relu'>> = {
  swish: 'swish',
  silu: 'swish',
  gelu: 'gelu',
  relu: 'relu',
};

/** The files frost reads; the tokenizer files are copied into the run folder. */
const REQUIRED = ['config.json', 'model.safetensors', 'source.spm', 'target.spm', 'vocab.json'] as const;
const OPTIONAL = ['generation_config.json', 'tokenizer_config.json'] as const;
/** The SentencePiece files' names in the run and model folders: `.model`, as every subword model frost exports. */
const RUN_SPM: Readonly<Record<string, string>> = { 'source.spm': 'source.model', 'target.spm': 'target.model' };

/** Refuses what frost's Transformer cannot be, each with the config field that says it. */
function checkConfig(c: MarianConfig, where: string): void {
  const refuse = (what: string) => {
    throw new ImportRefused(`${where}: ${what}`);
  };
  if (ACTIVATIONS[c.activation_function] === undefined)
    refuse(
      `activation_function '${c.activation_function}' is not one frost has (${Object.keys(ACTIVATIONS).join(', ')})`,
    );
  if (c.encoder_attention_heads !== c.decoder_attention_heads)
    refuse(
      `encoder_attention_heads ${c.encoder_attention_heads} and decoder_attention_heads ${c.decoder_attention_heads} differ; frost's Transformer has one head count`,
    );
  if (c.encoder_ffn_dim !== c.decoder_ffn_dim)
    refuse(
      `encoder_ffn_dim ${c.encoder_ffn_dim} and decoder_ffn_dim ${c.decoder_ffn_dim} differ; frost's Transformer has one ff size`,
    );
  if (c.d_model % c.encoder_attention_heads !== 0)
    refuse(`d_model ${c.d_model} is not a multiple of ${c.encoder_attention_heads} attention heads`);
  if (c.d_model % 2 !== 0) refuse(`d_model ${c.d_model} is odd; sinusoidal positions need an even size`);
  if (!c.share_encoder_decoder_embeddings)
    refuse(
      'share_encoder_decoder_embeddings is false (separate source and target vocabularies), which frost does not import',
    );
  if (c.decoder_vocab_size != null && c.decoder_vocab_size !== c.vocab_size)
    refuse(`decoder_vocab_size ${c.decoder_vocab_size} differs from vocab_size ${c.vocab_size}`);
  if (!c.tie_word_embeddings)
    refuse('tie_word_embeddings is false (an untied output layer), which frost does not import');
  if (c.normalize_before)
    refuse('normalize_before is true (pre-norm); Marian models are post-norm, and frost imports those');
  if (c.normalize_embedding)
    refuse('normalize_embedding is true (a layer norm on the embeddings), which Marian models lack');
  if (c.add_final_layer_norm) refuse('add_final_layer_norm is true, which Marian models lack');
  if (!c.static_position_embeddings)
    refuse('static_position_embeddings is false (learned positions), which Marian models lack');
  for (const key of ['pad_token_id', 'eos_token_id', 'decoder_start_token_id'] as const)
    if (c[key] >= c.vocab_size) refuse(`${key} ${c[key]} is outside the vocabulary of ${c.vocab_size}`);
  if (c.eos_token_id === c.pad_token_id) refuse(`eos_token_id and pad_token_id are both ${c.eos_token_id}`);
  checkBadWords(c.bad_words_ids, c.pad_token_id, where);
}

/** frost's search never emits `<pad>`; bad words other than the pad token are refused rather than ignored. */
function checkBadWords(bad: readonly (readonly number[])[] | null | undefined, pad: number, where: string): void {
  for (const ids of bad ?? []) {
    if (ids.length !== 1 || ids[0] !== pad)
      throw new ImportRefused(
        `${where}: bad_words_ids ${JSON.stringify(ids)}: frost's search forbids only the pad token (${pad})`,
      );
  }
}

/** vocab.json: token → id, the ids 0..V-1 once each. */
function parseVocab(json: unknown, c: MarianConfig, where: string): string[] {
  const vocab = parseWith(z.record(z.string(), z.number().int().nonnegative()), json, where);
  const tokens: string[] = [];
  for (const [token, id] of Object.entries(vocab)) {
    if (tokens[id] !== undefined) throw new ImportRefused(`${where}: id ${id} is both '${tokens[id]}' and '${token}'`);
    tokens[id] = token;
  }
  if (tokens.length !== Object.keys(vocab).length)
    throw new ImportRefused(`${where}: ids are not 0..${Object.keys(vocab).length - 1} (largest ${tokens.length - 1})`);
  if (tokens.length !== c.vocab_size)
    throw new ImportRefused(`${where}: ${tokens.length} tokens, but config.json's vocab_size is ${c.vocab_size}`);
  const expect = (id: number, token: string, field: string) => {
    if (tokens[id] !== token) throw new ImportRefused(`${where}: ${field} ${id} is '${tokens[id]}', not '${token}'`);
  };
  expect(c.eos_token_id, MARIAN_EOS, "config.json's eos_token_id");
  expect(c.pad_token_id, SPECIALS.pad.token, "config.json's pad_token_id");
  if (vocab[SPECIALS.unk.token] === undefined) throw new ImportRefused(`${where}: no '${SPECIALS.unk.token}' token`);
  if (vocab[SPECIALS.bos.token] !== undefined)
    throw new ImportRefused(
      `${where}: holds '${SPECIALS.bos.token}' (id ${vocab[SPECIALS.bos.token]}), the token frost's decoder starts from`,
    );
  return tokens;
}

/** The tensors config.json implies, with their shapes and the config fields each shape comes from. */
function expectedTensors(c: MarianConfig): Map<string, { shape: number[]; from: string }> {
  const d = c.d_model;
  const ff = c.encoder_ffn_dim;
  const V = c.vocab_size;
  const out = new Map<string, { shape: number[]; from: string }>();
  const add = (name: string, shape: number[], from: string) => out.set(name, { shape, from });
  add('model.shared.weight', [V, d], `vocab_size ${V}, d_model ${d}`);
  add('final_logits_bias', [1, V], `vocab_size ${V}`);
  new ExpectedShapes(add, d, ff, { d: `d_model ${d}`, ff: `ffn_dim ${ff}` }).layers(
    'model.encoder',
    c.encoder_layers,
    'model.decoder',
    c.decoder_layers,
  );
  return out;
}

/** Keys Hugging Face may store besides: copies of the shared embedding, and the (fixed) sinusoidal position tables. */
const TIED_COPIES = ['lm_head.weight', 'model.encoder.embed_tokens.weight', 'model.decoder.embed_tokens.weight'];
const POSITION_TABLES = ['model.encoder.embed_positions.weight', 'model.decoder.embed_positions.weight'];

/** Checks every tensor's name and shape against config.json; returns the tensors, decoded, by name. */
function checkTensors(file: SafetensorsFile, c: MarianConfig): Map<string, Float32Array> {
  const where = file.path;
  const expected = expectedTensors(c);
  checkImplied(file, expected, 'config.json');
  const shared = { shape: [c.vocab_size, c.d_model], from: `vocab_size ${c.vocab_size}, d_model ${c.d_model}` };
  for (const [name, entry] of file.entries) {
    if (expected.has(name)) continue;
    const optional = TIED_COPIES.includes(name)
      ? shared
      : POSITION_TABLES.includes(name)
        ? {
            shape: [c.max_position_embeddings, c.d_model],
            from: `max_position_embeddings ${c.max_position_embeddings}, d_model ${c.d_model}`,
          }
        : undefined;
    if (optional === undefined)
      throw new ImportRefused(
        `${where}: unexpected tensor '${name}' ${shapeText(entry.shape)}, not part of a Marian model`,
      );
    if (shapeText(entry.shape) !== shapeText(optional.shape))
      throw new ImportRefused(
        `${where}: '${name}' is ${shapeText(entry.shape)}, but config.json's ${optional.from} imply ${shapeText(optional.shape)}`,
      );
  }
  const tensors = decodeFinite(file);
  const E = tensors.get('model.shared.weight')!;
  for (const name of TIED_COPIES) {
    const copy = tensors.get(name);
    if (copy !== undefined && copy.some((x, i) => x !== E[i]))
      throw new ImportRefused(
        `${where}: '${name}' differs from 'model.shared.weight'; frost imports tied embeddings only`,
      );
  }
  for (const name of POSITION_TABLES) {
    const table = tensors.get(name);
    if (table === undefined) continue;
    const diff = maxSinusoidDiff(table, c.max_position_embeddings, c.d_model);
    if (diff > 1e-4)
      throw new ImportRefused(
        `${where}: '${name}' is not Marian's sinusoidal table (differs by ${diff.toPrecision(3)})`,
      );
  }
  return tensors;
}

/** The largest difference between a stored table and MarianSinusoidalPositionalEmbedding's (frost's `sinusoidal`). */
function maxSinusoidDiff(table: Float32Array, rows: number, d: number): number {
  let worst = 0;
  for (let p = 0; p < rows; p++) {
    for (let i = 0; i < d / 2; i++) {
      const angle = p / Math.pow(10000, (2 * i) / d);
      worst = Math.max(
        worst,
        Math.abs(table[p * d + i]! - Math.sin(angle)),
        Math.abs(table[p * d + d / 2 + i]! - Math.cos(angle)),
      );
    }
  }
  return worst;
}

/** frost's checkpoint tensors from Marian's, under frost's parameter names (models/archs/transformer-weights.ts). */
function frostTensors(t: Map<string, Float32Array>, c: MarianConfig, order: Int32Array): CheckpointTensor[] {
  const d = c.d_model;
  const ff = c.encoder_ffn_dim;
  const V = order.length;
  const out: CheckpointTensor[] = [];
  const E = t.get('model.shared.weight')!;
  out.push({ name: 'decoder/embedding', shape: [V, d], data: reorderRows(E, d, order) });
  const bias = t.get('final_logits_bias')!;
  out.push({ name: 'head/b', shape: [V], data: Float32Array.from(order, (m) => bias[m]!) });
  new TensorMapper(t, out, d, ff).layers('model.encoder', c.encoder_layers, 'model.decoder', c.decoder_layers);
  return out;
}

/** Languages: tokenizer_config.json's source_lang/target_lang, or the flags (which win). */
async function languages(dir: string, opts: MarianImportOptions): Promise<{ src: string; tgt: string }> {
  let src = opts.src;
  let tgt = opts.tgt;
  if (existsSync(join(dir, 'tokenizer_config.json'))) {
    const tc = parseWith(
      z.looseObject({
        source_lang: z.string().nullish(),
        target_lang: z.string().nullish(),
        separate_vocabs: z.boolean().nullish(),
      }),
      await readJsonFile(join(dir, 'tokenizer_config.json')),
      join(dir, 'tokenizer_config.json'),
    );
    if (tc.separate_vocabs)
      throw new ImportRefused(
        `${join(dir, 'tokenizer_config.json')}: separate_vocabs is true, which frost does not import`,
      );
    src ??= tc.source_lang ?? undefined;
    tgt ??= tc.target_lang ?? undefined;
  }
  if (!src || !tgt)
    throw new ImportRefused(`${dir}: which languages? tokenizer_config.json does not say; give --src and --tgt`);
  if (src === tgt) throw new ImportRefused(`source and target language are both '${src}'; give --src and --tgt`);
  return { src, tgt };
}

/** Checks `from` whole, then writes the run folder `out`; nothing is written when anything is refused. */
export async function importMarian(opts: MarianImportOptions): Promise<MarianImportResult> {
  const dir = resolve(opts.from);
  const out = resolve(opts.out);
  if (!existsSync(dir)) throw new ImportRefused(`${dir}: no such folder`);
  if (!existsSync(join(dir, 'model.safetensors')) && existsSync(join(dir, 'pytorch_model.bin')))
    throw new ImportRefused(
      `${dir} has pytorch_model.bin but no model.safetensors: frost reads no pickles; convert it first (transformers: MarianMTModel.from_pretrained(DIR).save_pretrained(DIR, safe_serialization=True))`,
    );
  for (const file of REQUIRED)
    if (!existsSync(join(dir, file)))
      throw new ImportRefused(`${dir}: no ${file} (a Marian folder has ${REQUIRED.join(', ')})`);
  if (existsSync(join(dir, 'target_vocab.json')))
    throw new ImportRefused(`${dir}: target_vocab.json (separate vocabularies) is not supported`);
  if (existsSync(out)) throw new ImportRefused(`${out} already exists; frost import writes a new run folder`);

  const configWhere = join(dir, 'config.json');
  const c = parseWith(marianConfigSchema, await readJsonFile(join(dir, 'config.json')), configWhere);
  checkConfig(c, configWhere);
  if (existsSync(join(dir, 'generation_config.json'))) {
    const where = join(dir, 'generation_config.json');
    const g = parseWith(generationSchema, await readJsonFile(join(dir, 'generation_config.json')), where);
    const agree = (key: 'decoder_start_token_id' | 'pad_token_id', value: number | null | undefined) => {
      if (value != null && value !== c[key])
        throw new ImportRefused(`${where}: ${key} is ${value}, but config.json says ${c[key]}`);
    };
    agree('decoder_start_token_id', g.decoder_start_token_id);
    agree('pad_token_id', g.pad_token_id);
    const eos = g.eos_token_id;
    if (eos != null && (Array.isArray(eos) ? eos.length !== 1 || eos[0] !== c.eos_token_id : eos !== c.eos_token_id))
      throw new ImportRefused(
        `${where}: eos_token_id is ${JSON.stringify(eos)}, but config.json says ${c.eos_token_id}`,
      );
    checkBadWords(g.bad_words_ids, c.pad_token_id, where);
  }
  const marianTokens = parseVocab(await readJsonFile(join(dir, 'vocab.json')), c, join(dir, 'vocab.json'));
  const { src, tgt } = await languages(dir, opts);
  const spm: Record<string, Uint8Array> = {};
  for (const file of ['source.spm', 'target.spm']) {
    spm[file] = new Uint8Array(await readFile(join(dir, file)));
    MarianSentencePiece.fromBytes(spm[file], join(dir, file)); // refused here, not when the run is first used
  }
  const file = await readCheckedSafetensors(join(dir, 'model.safetensors'));
  const tensors = checkTensors(file, c);

  // frost's ids: <pad>, <unk>, <s> (the decoder start's row), </s>, then Marian's other tokens in Marian's order.
  const unk = marianTokens.indexOf(SPECIALS.unk.token);
  const specials = new Set([c.pad_token_id, unk, c.eos_token_id]);
  const order = Int32Array.from([
    c.pad_token_id,
    unk,
    c.decoder_start_token_id,
    c.eos_token_id,
    ...[...marianTokens.keys()].filter((id) => !specials.has(id)),
  ]);
  const tokens = [
    SPECIALS.pad.token,
    SPECIALS.unk.token,
    SPECIALS.bos.token,
    SPECIALS.eos.token,
    ...Array.from(order.subarray(4), (m) => marianTokens[m]!),
  ];
  // Counts: 0 marks the <s> row, which the output layer then never scores (train/output-support.ts).
  const counts = tokens.map((_, id) => (id === SPECIALS.bos.id ? 0 : 1));
  let vocab: Vocabulary;
  try {
    vocab = Vocabulary.fromJSON(tokens, counts);
  } catch (err) {
    throw new ImportRefused(`${join(dir, 'vocab.json')}: ${(err as Error).message}`);
  }
  const checkpoint = frostTensors(tensors, c, order);

  const hashes: ImportedProvenance['files'] = {};
  for (const name of [...REQUIRED, ...OPTIONAL]) {
    if (name === 'model.safetensors') hashes[name] = { sha256: file.sha256, bytes: file.bytes };
    else if (existsSync(join(dir, name))) hashes[name] = await fileHash(join(dir, name));
  }
  const imported: ImportedProvenance = {
    format: 'huggingface-marian',
    from: dir,
    files: hashes,
    notes: [
      `frost ids 0-3 are Marian's ${c.pad_token_id} (<pad>), ${unk} (<unk>), ${c.decoder_start_token_id} (decoder start, as <s>) and ${c.eos_token_id} (</s>); then Marian's other ids in order`,
      `model.safetensors stores ${[...new Set([...file.entries.values()].map((e) => e.dtype))].join(', ')}; frost keeps float32`,
    ],
    at: new Date().toISOString(),
  };
  const config = translationConfigSchema.parse({
    task: 'translation',
    arch: 'transformer',
    preset: 'imported',
    archConfig: {
      encoderLayers: c.encoder_layers,
      decoderLayers: c.decoder_layers,
      model: c.d_model,
      heads: c.encoder_attention_heads,
      ff: c.encoder_ffn_dim,
      dropout: 0,
      attentionDropout: 0,
      activationDropout: 0,
      norm: 'post',
      activation: ACTIVATIONS[c.activation_function],
      positions: 'sinusoidal',
      maxPositions: c.max_position_embeddings,
      embeddingScale: c.scale_embedding ? 'sqrt-d' : 'none',
    },
    head: { name: 'tied', options: {} },
    seed: 1,
    data: { dir: opts.data?.dir ?? '', kind: opts.data?.kind ?? 'plain', src, tgt },
    tokenizer: MARIAN_TOKENIZER,
    vocab: { kind: MARIAN_TOKENIZER, joint: true, maskUnseen: true, size: Math.max(261, vocab.size) },
    marian: { files: { [src]: RUN_SPM['source.spm']!, [tgt]: RUN_SPM['target.spm']! }, source: src },
    imported,
  });

  const files = Object.fromEntries(Object.entries(spm).map(([name, bytes]) => [RUN_SPM[name]!, bytes]));
  const parameters = await writeImportedRun(out, { config, srcVocab: vocab, tgtVocab: vocab, checkpoint, files });
  return {
    out,
    config,
    vocabSize: vocab.size,
    parameters,
  };
}
