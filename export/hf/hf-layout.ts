/**
 * `frost export --hf DIR`: an exported frost Transformer, rewritten in the layout transformers.js
 * (`pipeline('translation', DIR)`) and Optimum (`ORTModelForSeq2SeqLM.from_pretrained(DIR)`) load as they are:
 *
 *   onnx/encoder_model.onnx          input_ids, attention_mask → last_hidden_state (encoder-model.ts)
 *   onnx/decoder_model_merged.onnx   one decoder step, Optimum's cache names (decoder-model.ts)
 *   config.json, generation_config.json                                         (model-config.ts)
 *   tokenizer.json, tokenizer_config.json                                       (hf-tokenizers.ts)
 *
 * It is made from the frost export (its card, graphs and subword model), not from the run, so it holds the
 * same graphs frost serves, frozen heads regenerated in the graph as there. What cannot take the layout is
 * refused in one line that says why (see {@link hfRefusal}).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { recoverSwap } from '../../core/interrupted-swap.ts';
import { encodeModel } from '../../core/onnx/proto.ts';
import { MODEL_CARD_FILE, parseModelCard, type ModelCard } from '../../core/runtime/model-card.ts';
import { archNames, getArch } from '../../models/index.ts';
import { replaceDir, syncDir, writeDurable } from '../../train/atomic-write.ts';
import { decoderModel } from './decoder-model.ts';
import { encoderModel } from './encoder-model.ts';
import { HF_TOKENIZERS, tokenizerRefusal } from './hf-tokenizers.ts';
import { generationConfig, modelConfig } from './model-config.ts';
import { readOnnxModel } from './onnx-file.ts';
import { DECODER_FILE, ENCODER_FILE } from './optimum-names.ts';
import { tokenizerConfig } from './tokenizer-json.ts';
import { transformerShape } from './transformer-shape.ts';

/**
 * Why `card`'s model cannot take the Hugging Face layout, or undefined when it can. Only an architecture that
 * declares `selfAttentionCaches` (models/archs/types.ts): transformers.js and Optimum feed an encoder-decoder's
 * decoder per-layer key/value caches that grow by one position a step, and such an architecture's step state is
 * exactly that. And only a tokeniser tokenizer.json can express (hf-tokenizers.ts) over one vocabulary: the layout
 * has one tokenizer for source and target ids, and frost's word tokenisers (Moses rules) have no tokenizer.json form.
 */
export function hfRefusal(card: ModelCard): string | undefined {
  const refusal = hfRunRefusal(card) ?? HF_TOKENIZERS[card.tokenizer]!.refusal(card);
  if (refusal !== undefined) return refusal;
  if (card.graphs.decoder.cache !== undefined) {
    return `--hf: the step graph returns only each step's new keys and values ${WHY} feeds whole caches; export with frost export --hf, which writes them so)`;
  }
  return undefined;
}

/** The part of {@link hfRefusal} a run's config already answers, so `frost export --hf` refuses before exporting. */
export function hfRunRefusal(model: { task: string; arch: string; tokenizer?: string }): string | undefined {
  if (model.task !== 'translation') return `--hf: a ${model.task} model ${WHY} is for translation models)`;
  const capable = cachingArchs();
  if (!capable.includes(model.arch)) {
    return (
      `--hf: architecture '${model.arch}' cannot take it ${WHY} feeds the decoder key/value caches that grow one ` +
      `position a step, which only architectures declaring selfAttentionCaches have: ${capable.join(', ')})`
    );
  }
  if (model.tokenizer !== undefined && HF_TOKENIZERS[model.tokenizer] === undefined)
    return tokenizerRefusal(model.tokenizer);
  return undefined;
}

/** The architectures whose step state the layout can feed, from the registry (a new one declares it, no edit here). */
function cachingArchs(): string[] {
  return archNames({ family: 'seq2seq' }).filter((name) => getArch(name).selfAttentionCaches === true);
}

const WHY = '(the Hugging Face layout';

const MIN_OPSET = 13;

/**
 * Writes the Hugging Face layout of the frost model in `modelDir` to `outDir`, as `--out` is written
 * (export/model-dir.ts): into a temporary sibling, fsynced, and swapped in whole, so that a kill or a full disk
 * leaves the previous layout as it was and no file of another version (a stray `decoder_with_past_model.onnx`)
 * survives. A folder that holds anything but a previous frost --hf export is refused, not replaced.
 * @returns the files written
 * @throws Error naming the folder and the entry that is not part of a frost --hf export
 * @throws WriteFailed naming the path that failed (a full disk, a read-only folder)
 */
export async function writeHfLayout(modelDir: string, outDir: string): Promise<string[]> {
  const cardPath = join(modelDir, MODEL_CARD_FILE);
  const card = parseModelCard(await readFile(cardPath, 'utf8'), cardPath);
  const refusal = hfRefusal(card);
  if (refusal !== undefined) throw new Error(refusal);
  const tokenizer = await HF_TOKENIZERS[card.tokenizer]!.write(card, modelDir);
  const frostEncoder = await readOnnxModel(join(modelDir, card.graphs.encoder.file));
  const frostDecoder = await readOnnxModel(join(modelDir, card.graphs.decoder.file));
  for (const m of [frostEncoder, frostDecoder]) {
    // The wrappers pass Squeeze/Unsqueeze/ReduceSum axes as inputs, as opset 13 and later read them.
    const opset = m.opset_import.find((o) => o.domain === '')?.version ?? 0;
    if (opset < MIN_OPSET)
      throw new Error(`--hf: graph '${m.graph.name}' is at opset ${opset}; the layout needs ${MIN_OPSET} or later`);
  }
  const shape = transformerShape(frostDecoder.graph);
  const config = modelConfig(card, shape);

  const files: Record<string, Uint8Array | Record<string, unknown>> = {
    [ENCODER_FILE]: encodeModel(encoderModel(frostEncoder, shape)),
    [DECODER_FILE]: encodeModel(decoderModel(frostEncoder, frostDecoder, shape)),
    'config.json': config,
    'generation_config.json': generationConfig(card),
    'tokenizer.json': tokenizer.json,
    'tokenizer_config.json': tokenizerConfig(config.max_position_embeddings as number),
  };
  for (const line of [...tokenizer.warnings, ...recoverSwap(outDir)]) process.stderr.write(`${line}\n`);
  if (existsSync(outDir)) checkHfReplaceable(outDir);
  await mkdir(dirname(outDir), { recursive: true });
  await replaceDir(outDir, async (dir) => {
    for (const [file, content] of Object.entries(files)) {
      const path = join(dir, file);
      await mkdir(dirname(path), { recursive: true });
      await writeDurable(path, content instanceof Uint8Array ? content : `${JSON.stringify(content, null, 2)}\n`);
    }
    syncDir(join(dir, dirname(ENCODER_FILE)));
  });
  return Object.keys(files);
}

/** The entries a frost --hf folder holds: its JSON files and its `onnx/` folder of graphs. */
const HF_ENTRY = /^(?:[\w.-]+\.json|onnx)$/;

/**
 * Refuses a folder `--hf` would replace that is not a previous frost --hf export (its config.json names the frost
 * model it came from): a user's own folder is never overwritten.
 */
function checkHfReplaceable(dir: string): void {
  const entries = readdirSync(dir);
  if (entries.length === 0) return;
  const refuse = (why: string) => {
    throw new Error(
      `--hf ${dir}: ${why}; --hf replaces its folder whole, so give a new or empty folder, or a previous frost --hf export`,
    );
  };
  const other = entries.find((e) => !HF_ENTRY.test(e));
  if (other !== undefined) refuse(`it holds ${other}, which is not part of a frost --hf export`);
  let config: { frost?: unknown } | undefined;
  try {
    config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as { frost?: unknown };
  } catch {
    refuse('it has no config.json that frost wrote');
  }
  if (typeof config?.frost !== 'object' || config.frost === null) refuse('its config.json was not written by frost');
}
