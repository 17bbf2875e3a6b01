/**
 * `frost import fairseq DIR --out RUN`: a fairseq `transformer` or `lightconv` (LightConv, DynamicConv: frost's
 * lightconv / dynamicconv, whose layers fairseq-lightconv.ts maps) checkpoint, converted by
 * `python3 -m frost_torch.convert_checkpoint checkpoint.pt DIR` (model.safetensors + fairseq.json: frost never
 * unpickles) with fairseq's dictionaries (dict.SRC.txt, dict.TGT.txt) beside it, as a frost run folder, which
 * `frost export`, `translate`, `serve` and the page then take like any Transformer run. docs/import.md says what is
 * supported and what is refused.
 *
 * fairseq's conventions are settings of frost's Transformer: `sinusoidal-fairseq` positions (fairseq's frequencies,
 * the first token at position 2), `embeddingScale` (`no_scale_embedding`), `layernormEmbedding`, `norm: pre|post`
 * (`*_normalize_before`, with the final layer norm per stack), relu or gelu. Its output layer is `learned` (a
 * separate `decoder.output_projection.weight`, no bias), `tied` (share_decoder_input_output_embed, bias 0) or, for
 * a model with frost's head (python/fairseq_frost, python/frost_torch: `frost_head`, `frost_head_seed`,
 * `frost_head_options`), that head, whose frozen matrix the export regenerates from the seed.
 *
 * Ids: fairseq's dictionaries are `<s>` 0, `<pad>` 1, `</s>` 2, `<unk>` 3, then dict.txt's words; frost keeps
 * `<pad>`, `<unk>`, `<s>`, `</s>` at 0-3. frost's 0, 1, 3 are fairseq's 1, 3, 2; frost's 2 (`<s>`, where frost's
 * decoder starts) holds the embedding row of fairseq's `</s>`, the token fairseq's decoder starts from (its
 * prev_output_tokens begin with eos); ids 4… are fairseq's 4… unchanged, and fairseq's own `<s>` comes last, as
 * FAIRSEQ_BOS. The `<s>` row's count is 0, so the output layer pins its logit (train/output-support.ts) and the
 * softmax is over exactly fairseq's symbols. The output head is built over fairseq's rows in fairseq's order and its
 * logits gathered into frost's (the `sourceRows` head option, models/heads/registry.ts): a frozen head then
 * regenerates the very matrix the model trained with.
 *
 * Everything read is input from strangers: every file is checked, and a wrong shape, a missing or extra tensor or a
 * config that contradicts the tensors is refused with one line naming the key and both shapes, before anything is
 * written. The run folder is written whole under a temporary name and renamed into place (train/atomic-write.ts).
 */
import { existsSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { z } from 'zod';
import type { SafetensorsFile } from '../../core/safetensors/node-file.ts';
import { FAIRSEQ_BPE, FAIRSEQ_TOKENIZER, fairseqBpe, type FairseqBpe } from '../../core/subword/fairseq-tokenizer.ts';
import { SOURCE_ROWS_OPTION } from '../../models/heads/registry.ts';
import type { CheckpointTensor } from '../checkpoint.ts';
import { translationConfigSchema, type ImportedProvenance, type TranslationRunConfig } from '../run-config.ts';
import { frostOrder, frostVocabulary, readDictionary, sourceRows } from './fairseq-dictionary.ts';
import {
  checkImplied,
  decodeFinite,
  fileHash,
  parseWith,
  readCheckedSafetensors,
  readJsonFile,
  refuse,
  shapeText,
  size,
  writeImportedRun,
} from './import-files.ts';
import {
  isLightconvArch,
  lightconvArchConfig,
  lightconvExpected,
  lightconvLayers,
  lightconvShape,
  unusedLightconvTensor,
  type LightconvShape,
} from './fairseq-lightconv.ts';
import { ExpectedShapes, reorderRows, TensorMapper, transpose } from './transformer-tensors.ts';

export interface FairseqImportOptions {
  /** The converted folder (model.safetensors, fairseq.json), or a .pt checkpoint, which is refused. */
  from: string;
  out: string;
  /** Where dict.SRC.txt and dict.TGT.txt are (fairseq's data-bin folder); default: `from`. */
  dicts?: string;
  src?: string;
  tgt?: string;
  /** The BPE the model was trained with; default: what fairseq.json records, else none. */
  bpe?: FairseqBpe;
  /** subword_nmt's codes file or the SentencePiece model; default: `bpecodes` / `sentencepiece.bpe.model` in `from`. */
  bpeFile?: string;
  data?: { dir: string; kind: 'multi30k' | 'plain' };
}

export interface FairseqImportResult {
  out: string;
  config: TranslationRunConfig;
  srcVocab: number;
  tgtVocab: number;
  parameters: number;
  head: string;
}

/** Each BPE's file: its default name beside the checkpoint, and its name in the run folder. */
const BPE_FILES: Readonly<Record<Exclude<FairseqBpe, 'none'>, string>> = {
  subword_nmt: 'bpecodes',
  sentencepiece: 'sentencepiece.bpe.model',
};

const bool = z.boolean().nullish();
/** What frost reads of the model's args (fairseq's names); the rest is kept in the provenance only. */
const argsSchema = z.looseObject({
  arch: z.string(),
  encoder_embed_dim: size(),
  decoder_embed_dim: size(),
  encoder_ffn_embed_dim: size(),
  decoder_ffn_embed_dim: size(),
  encoder_layers: size(),
  decoder_layers: size(),
  encoder_attention_heads: size(),
  decoder_attention_heads: size(),
  encoder_normalize_before: bool,
  decoder_normalize_before: bool,
  share_all_embeddings: bool,
  share_decoder_input_output_embed: bool,
  no_scale_embedding: bool,
  layernorm_embedding: bool,
  activation_fn: z.string().nullish(),
  max_source_positions: size().nullish(),
  max_target_positions: size().nullish(),
  encoder_learned_pos: bool,
  decoder_learned_pos: bool,
  no_token_positional_embeddings: bool,
  adaptive_softmax_cutoff: z.unknown().nullish(),
  adaptive_input: bool,
  cross_self_attention: bool,
  no_cross_attention: bool,
  decoder_output_dim: size().nullish(),
  decoder_input_dim: size().nullish(),
  encoder_layers_to_keep: z.unknown().nullish(),
  decoder_layers_to_keep: z.unknown().nullish(),
  frost_head: z.string().nullish(),
  frost_head_seed: z.number().int().nullish(),
  frost_head_options: z.union([z.record(z.string(), z.unknown()), z.string()]).nullish(),
});
type FairseqArgs = z.infer<typeof argsSchema>;

const metaSchema = z.looseObject({
  model: z.record(z.string(), z.unknown()),
  task: z.looseObject({ source_lang: z.string().nullish(), target_lang: z.string().nullish() }).nullish(),
  bpe: z.string().nullish(),
  source: z.string().nullish(),
});

/** The frost heads a fairseq checkpoint may carry, and their learned parameters' shapes (python/frost_heads). */
const FROST_HEADS: Readonly<Record<string, (V: number, d: number) => Record<string, number[]>>> = {
  learned: (V, d) => ({ W: [d, V], b: [V] }),
  tied: (V) => ({ b: [V] }),
  'fixed-uniform': () => ({}),
  'fixed-l2': () => ({}),
  hadamard: () => ({ scale: [1] }),
};

/**
 * Refuses what frost's Transformer (or LightConv: fairseq-lightconv.ts checks the rest) cannot be, each with the
 * field that says it.
 */
function checkArgs(a: FairseqArgs, where: string): void {
  const no = (what: string) => refuse(`${where}: ${what}`);
  const lightconv = isLightconvArch(a.arch);
  if (/_lm\b|_lm_/.test(a.arch)) no(`arch '${a.arch}' is a language model; frost imports fairseq's translation models`);
  if (!lightconv && !/transformer/.test(a.arch))
    no(`arch '${a.arch}' is not a fairseq transformer or lightconv (frost imports those two)`);
  const model = lightconv ? "frost's LightConv" : "frost's Transformer";
  const pairs = [
    ['encoder_embed_dim', 'decoder_embed_dim'],
    ['encoder_ffn_embed_dim', 'decoder_ffn_embed_dim'],
    ['encoder_attention_heads', 'decoder_attention_heads'],
  ] as const;
  for (const [e, d] of pairs) if (a[e] !== a[d]) no(`${e} ${a[e]} and ${d} ${a[d]} differ; ${model} has one of each`);
  const d = a.encoder_embed_dim;
  for (const key of ['decoder_output_dim', 'decoder_input_dim'] as const)
    if (a[key] != null && a[key] !== d) no(`${key} ${a[key]} differs from decoder_embed_dim ${d}`);
  if (d % a.encoder_attention_heads !== 0)
    no(`encoder_embed_dim ${d} is not a multiple of ${a.encoder_attention_heads} attention heads`);
  if (d % 2 !== 0 || d < 4) no(`encoder_embed_dim ${d}: sinusoidal positions need an even size of at least 4`);
  if (Boolean(a.encoder_normalize_before) !== Boolean(a.decoder_normalize_before))
    no(
      `encoder_normalize_before ${Boolean(a.encoder_normalize_before)} and decoder_normalize_before ${Boolean(a.decoder_normalize_before)} differ; ${model} is pre-norm or post-norm throughout`,
    );
  // fairseq's lightconv has no activation_fn (its feed-forward blocks are ReLU), nor the embedding flags.
  const activation = lightconv ? 'relu' : (a.activation_fn ?? 'relu');
  if (activation !== 'relu' && activation !== 'gelu')
    no(`activation_fn '${activation}' is not one frost has (relu, gelu)`);
  const unsupported: [keyof FairseqArgs, string][] = [
    ['encoder_learned_pos', 'learned positions'],
    ['decoder_learned_pos', 'learned positions'],
    ['no_token_positional_embeddings', 'no positions'],
    ['adaptive_input', 'adaptive input embeddings'],
    ['cross_self_attention', 'cross+self attention'],
    ['no_cross_attention', 'a decoder without attention over the source'],
  ];
  for (const [key, what] of unsupported) if (a[key]) no(`${key} is true (${what}), which frost does not import`);
  if (a.adaptive_softmax_cutoff != null && a.adaptive_softmax_cutoff !== '')
    no(`adaptive_softmax_cutoff ${JSON.stringify(a.adaptive_softmax_cutoff)}: frost does not import adaptive softmax`);
  for (const key of ['encoder_layers_to_keep', 'decoder_layers_to_keep'] as const)
    if (a[key] != null && a[key] !== '') no(`${key} is set (layer dropping), which frost does not import`);
  if (a.frost_head && FROST_HEADS[a.frost_head] === undefined)
    no(`frost_head '${a.frost_head}': frost imports ${Object.keys(FROST_HEADS).join(', ')} (not yet the others)`);
}

/** A tensor fairseq.json implies: its shape (or a second layout fairseq also saves), and what the shape comes from. */
interface Expected {
  shape: number[];
  from: string;
  also?: number[];
}

/**
 * The tensors fairseq.json implies, with their shapes and the fields and files each shape comes from; `lc`: a
 * lightconv model's (fairseq-lightconv.ts says its layers').
 */
function expectedTensors(
  a: FairseqArgs,
  Vs: number,
  Vt: number,
  dicts: { src: string; tgt: string },
  lc: LightconvShape | undefined,
) {
  const d = a.encoder_embed_dim;
  const ff = a.encoder_ffn_embed_dim;
  const out = new Map<string, Expected>();
  const add = (name: string, shape: number[], from: string, also?: number[]) =>
    out.set(name, { shape, from, ...(also ? { also } : {}) });
  const dim = `encoder_embed_dim ${d}`;
  add('encoder.embed_tokens.weight', [Vs, d], `${dicts.src}'s ${Vs - 4} words, ${dim}`);
  add('decoder.embed_tokens.weight', [Vt, d], `${dicts.tgt}'s ${Vt - 4} words, ${dim}`);
  const shapes = new ExpectedShapes(add, d, ff, { d: dim, ff: `encoder_ffn_embed_dim ${ff}` });
  if (lc) lightconvExpected(lc, shapes);
  else shapes.layers('encoder', a.encoder_layers, 'decoder', a.decoder_layers);
  if (a.encoder_normalize_before) {
    shapes.norm('encoder.layer_norm');
    shapes.norm('decoder.layer_norm');
  }
  if (a.layernorm_embedding && !lc) {
    shapes.norm('encoder.layernorm_embedding');
    shapes.norm('decoder.layernorm_embedding');
  }
  if (a.frost_head) {
    for (const [name, shape] of Object.entries(FROST_HEADS[a.frost_head]!(Vt, d)))
      add(`decoder.output_projection.${name}`, shape, `frost_head '${a.frost_head}', ${dicts.tgt}, ${dim}`);
  } else if (!tiedOutput(a)) {
    add('decoder.output_projection.weight', [Vt, d], `${dicts.tgt}'s ${Vt - 4} words, ${dim}`);
  }
  return out;
}

/** fairseq ties the output layer to the decoder's embedding with either flag (build_model sets the second). */
const tiedOutput = (a: FairseqArgs) => Boolean(a.share_all_embeddings || a.share_decoder_input_output_embed);

/** Buffers fairseq saves that hold no weights. */
const HARMLESS = /^(encoder|decoder)\.(version|embed_positions\._float_tensor)$/;

function checkTensors(
  file: SafetensorsFile,
  expected: Map<string, Expected>,
  a: FairseqArgs,
  unused: (name: string, shape: readonly number[]) => boolean,
) {
  const where = file.path;
  checkImplied(file, expected, 'fairseq.json');
  const tiedCopy = !a.frost_head && tiedOutput(a) ? 'decoder.output_projection.weight' : undefined;
  const skipped = (name: string) => HARMLESS.test(name) || unused(name, file.entries.get(name)!.shape);
  for (const [name, entry] of file.entries) {
    if (expected.has(name) || skipped(name)) continue;
    if (name === tiedCopy) {
      const want = expected.get('decoder.embed_tokens.weight')!.shape;
      if (shapeText(entry.shape) !== shapeText(want))
        refuse(
          `${where}: '${name}' is ${shapeText(entry.shape)}, but the tied output layer implies ${shapeText(want)}`,
        );
      continue;
    }
    if (name.startsWith('decoder.output_projection.') && !a.frost_head && !tiedCopy)
      refuse(
        `${where}: unexpected tensor '${name}' ${shapeText(entry.shape)}: a frost head's, but fairseq.json names no frost_head`,
      );
    refuse(`${where}: unexpected tensor '${name}' ${shapeText(entry.shape)}, not part of this fairseq ${a.arch} model`);
  }
  const tensors = decodeFinite(file, skipped);
  const same = (x: string, y: string, why: string) => {
    const [p, q] = [tensors.get(x)!, tensors.get(y)!];
    if (p.length !== q.length || p.some((v, i) => v !== q[i])) refuse(`${where}: '${x}' differs from '${y}' (${why})`);
  };
  if (a.share_all_embeddings)
    same('decoder.embed_tokens.weight', 'encoder.embed_tokens.weight', 'share_all_embeddings is true');
  if (tiedCopy && tensors.has(tiedCopy))
    same(tiedCopy, 'decoder.embed_tokens.weight', 'share_decoder_input_output_embed is true');
  return tensors;
}

/**
 * frost's checkpoint tensors from fairseq's, under frost's names (models/archs/transformer-weights.ts, or
 * lightconv-weights.ts for a lightconv model `lc`).
 */
function frostTensors(
  t: Map<string, Float32Array>,
  a: FairseqArgs,
  Vs: number,
  Vt: number,
  joint: boolean,
  lc: LightconvShape | undefined,
) {
  const d = a.encoder_embed_dim;
  const ff = a.encoder_ffn_embed_dim;
  const out: CheckpointTensor[] = [];
  const tgtOrder = frostOrder(Vt);
  out.push({
    name: 'decoder/embedding',
    shape: [Vt + 1, d],
    data: reorderRows(t.get('decoder.embed_tokens.weight')!, d, tgtOrder),
  });
  if (!joint) {
    const E = t.get('encoder.embed_tokens.weight')!;
    out.push({ name: 'encoder/embedding', shape: [Vs + 1, d], data: reorderRows(E, d, frostOrder(Vs)) });
  }
  const map = new TensorMapper(t, out, d, ff);
  if (lc) lightconvLayers(lc, map);
  else map.layers('encoder', a.encoder_layers, 'decoder', a.decoder_layers);
  if (a.encoder_normalize_before) {
    map.norm('encoder.layer_norm', 'encoder/norm');
    map.norm('decoder.layer_norm', 'decoder/norm');
  }
  if (a.layernorm_embedding && !lc) {
    map.norm('encoder.layernorm_embedding', 'encoder/embedding_norm');
    map.norm('decoder.layernorm_embedding', 'decoder/embedding_norm');
  }
  // The head, over fairseq's rows in fairseq's order (the sourceRows option gathers its logits into frost's).
  if (a.frost_head) {
    for (const [name, shape] of Object.entries(FROST_HEADS[a.frost_head]!(Vt, d)))
      out.push({ name: `head/${name}`, shape, data: t.get(`decoder.output_projection.${name}`)! });
  } else if (tiedOutput(a)) {
    out.push({ name: 'head/b', shape: [Vt], data: new Float32Array(Vt) });
  } else {
    out.push({ name: 'head/W', shape: [d, Vt], data: transpose(t.get('decoder.output_projection.weight')!, Vt, d) });
    out.push({ name: 'head/b', shape: [Vt], data: new Float32Array(Vt) });
  }
  return out;
}

function headOptions(a: FairseqArgs, where: string): Record<string, unknown> {
  const raw = a.frost_head_options;
  if (raw == null || raw === '') return {};
  if (typeof raw !== 'string') return raw;
  try {
    const parsed = JSON.parse(raw) as unknown;
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
      return parsed as Record<string, unknown>;
  } catch {
    // refused below
  }
  refuse(`${where}: frost_head_options ${JSON.stringify(raw)} is not a JSON object`);
}

/** The run config's archConfig of frost's Transformer for a fairseq transformer. */
function transformerArchConfig(a: FairseqArgs, maxPositions: number) {
  return {
    encoderLayers: a.encoder_layers,
    decoderLayers: a.decoder_layers,
    model: a.encoder_embed_dim,
    heads: a.encoder_attention_heads,
    ff: a.encoder_ffn_embed_dim,
    dropout: 0,
    attentionDropout: 0,
    activationDropout: 0,
    norm: a.encoder_normalize_before ? 'pre' : 'post',
    activation: a.activation_fn ?? 'relu',
    positions: 'sinusoidal-fairseq',
    maxPositions,
    embeddingScale: a.no_scale_embedding ? 'none' : 'sqrt-d',
    ...(a.layernorm_embedding ? { layernormEmbedding: true } : {}),
  };
}

/** Checks the checkpoint folder whole, then writes the run folder `out`; writes nothing when refused. */
export async function importFairseq(opts: FairseqImportOptions): Promise<FairseqImportResult> {
  const from = resolve(opts.from);
  const out = resolve(opts.out);
  if (!existsSync(from)) refuse(`${from}: no such file or folder`);
  if (!statSync(from).isDirectory() || /\.(pt|pth|bin)$/.test(from))
    refuse(
      `${from} is a PyTorch pickle, which frost does not read (loading one runs code): convert it first with python3 -m frost_torch.convert_checkpoint ${basename(from)} DIR (PYTHONPATH=python), then import DIR`,
    );
  for (const file of ['model.safetensors', 'fairseq.json'])
    if (!existsSync(join(from, file)))
      refuse(`${from}: no ${file} (python3 -m frost_torch.convert_checkpoint CHECKPOINT.pt DIR writes both)`);
  if (existsSync(out)) refuse(`${out} already exists; frost import writes a new run folder`);

  const metaWhere = join(from, 'fairseq.json');
  const meta = parseWith(metaSchema, await readJsonFile(metaWhere), metaWhere);
  const a = parseWith(argsSchema, meta.model, `${metaWhere}: model`);
  checkArgs(a, metaWhere);
  const lc = isLightconvArch(a.arch) ? lightconvShape(meta.model, metaWhere) : undefined;
  const src = opts.src ?? meta.task?.source_lang ?? undefined;
  const tgt = opts.tgt ?? meta.task?.target_lang ?? undefined;
  if (!src || !tgt) refuse(`${metaWhere}: which languages? its task names none; give --src and --tgt`);
  if (src === tgt) refuse(`source and target language are both '${src}'; give --src and --tgt`);

  const recorded = meta.bpe ?? undefined;
  if (recorded !== undefined && !(FAIRSEQ_BPE as readonly string[]).includes(recorded))
    refuse(`${metaWhere}: bpe '${recorded}' is not one frost reads (${FAIRSEQ_BPE.join(', ')})`);
  if (opts.bpe !== undefined && recorded !== undefined && opts.bpe !== recorded)
    refuse(`--bpe ${opts.bpe}, but ${metaWhere} says the model was trained with bpe '${recorded}'`);
  const bpe = opts.bpe ?? (recorded as FairseqBpe | undefined) ?? 'none';
  let bpeBytes: Uint8Array | undefined;
  let bpePath: string | undefined;
  if (bpe !== 'none') {
    bpePath = resolve(opts.bpeFile ?? join(from, BPE_FILES[bpe]));
    if (!existsSync(bpePath)) refuse(`${bpePath}: no such file (bpe '${bpe}' needs it; give --bpe-file)`);
    bpeBytes = new Uint8Array(await readFile(bpePath));
    try {
      fairseqBpe(bpe, bpeBytes, bpePath);
    } catch (err) {
      refuse((err as Error).message);
    }
  }

  const dictDir = resolve(opts.dicts ?? from);
  const dictFiles = { src: join(dictDir, `dict.${src}.txt`), tgt: join(dictDir, `dict.${tgt}.txt`) };
  const srcWords = await readDictionary(dictFiles.src);
  const tgtWords = await readDictionary(dictFiles.tgt);
  const Vs = 4 + srcWords.length;
  const Vt = 4 + tgtWords.length;
  if (a.share_all_embeddings && srcWords.join('\n') !== tgtWords.join('\n'))
    refuse(`${dictFiles.src} and ${dictFiles.tgt} differ, but share_all_embeddings needs one dictionary`);

  const file = await readCheckedSafetensors(join(from, 'model.safetensors'));
  const tensors = checkTensors(
    file,
    expectedTensors(a, Vs, Vt, { src: basename(dictFiles.src), tgt: basename(dictFiles.tgt) }, lc),
    a,
    (name, shape) => lc !== undefined && unusedLightconvTensor(lc, name, shape),
  );
  const joint = Boolean(a.share_all_embeddings);
  const srcVocab = frostVocabulary(srcWords, dictFiles.src);
  const tgtVocab = joint ? srcVocab : frostVocabulary(tgtWords, dictFiles.tgt);
  const checkpoint = frostTensors(tensors, a, Vs, Vt, joint, lc);
  const headName = a.frost_head || (tiedOutput(a) ? 'tied' : 'learned');
  const head = {
    name: headName,
    options: { ...(a.frost_head ? headOptions(a, metaWhere) : {}), [SOURCE_ROWS_OPTION]: sourceRows(Vt) },
  };

  const files: ImportedProvenance['files'] = {};
  files['model.safetensors'] = { sha256: file.sha256, bytes: file.bytes };
  files['fairseq.json'] = await fileHash(metaWhere);
  files[basename(dictFiles.src)] = await fileHash(dictFiles.src);
  files[basename(dictFiles.tgt)] = await fileHash(dictFiles.tgt);
  if (bpePath) files[basename(bpePath)] = await fileHash(bpePath);
  const imported: ImportedProvenance = {
    format: lc ? 'fairseq-lightconv' : 'fairseq-transformer',
    from,
    files,
    notes: [
      `converted from ${meta.source ?? 'a fairseq checkpoint'} (arch ${a.arch}${lc ? `, ${lc.conv} convolutions` : ''}) by frost_torch.convert_checkpoint`,
      "frost ids 0-3 are fairseq's 1 (<pad>), 3 (<unk>), 2 (</s>, where fairseq's decoder starts, as <s>) and 2 (</s>); 4… are fairseq's 4…; fairseq's <s> (0) is the last id",
      `output layer: ${a.frost_head ? `frost's '${a.frost_head}' head (seed ${a.frost_head_seed ?? 1})` : tiedOutput(a) ? 'tied to the decoder embedding, no bias' : 'decoder.output_projection.weight, no bias'}, over fairseq's rows in fairseq's order`,
    ],
    at: new Date().toISOString(),
  };
  const maxPositions = Math.max(a.max_source_positions ?? 1024, a.max_target_positions ?? 1024);
  const config = translationConfigSchema.parse({
    task: 'translation',
    arch: lc?.arch ?? 'transformer',
    preset: 'imported',
    archConfig: lc
      ? lightconvArchConfig(lc, { ...a, pre: Boolean(a.encoder_normalize_before), maxPositions })
      : transformerArchConfig(a, maxPositions),
    head,
    seed: a.frost_head_seed ?? 1,
    data: { dir: opts.data?.dir ?? '', kind: opts.data?.kind ?? 'plain', src, tgt },
    tokenizer: FAIRSEQ_TOKENIZER,
    vocab: { kind: FAIRSEQ_TOKENIZER, joint, maskUnseen: true, size: Math.max(261, tgtVocab.size) },
    fairseq: { bpe, ...(bpe !== 'none' ? { file: BPE_FILES[bpe] } : {}), source: src },
    imported,
  });

  const copied = bpe !== 'none' ? { [BPE_FILES[bpe]]: bpeBytes! } : {};
  const parameters = await writeImportedRun(out, { config, srcVocab, tgtVocab, checkpoint, files: copied });
  return {
    out,
    config,
    srcVocab: srcVocab.size,
    tgtVocab: tgtVocab.size,
    parameters,
    head: headName,
  };
}
