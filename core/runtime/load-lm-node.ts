/**
 * Loads an exported language model (lm-card.ts) with onnxruntime-node; the browser builds an
 * {@link LmRuntime} itself from fetched bytes and onnxruntime-web.
 */
import { isAbsolute, join, relative, resolve } from 'node:path';
import { parseLmCard, type LmCard } from './lm-card.ts';
import { LmRuntime } from './lm.ts';
import { readGraph } from './load-node.ts';
import { MODEL_CARD_FILE } from './model-card.ts';
import { cardFiles, checkModelFiles, readModelFile } from './model-files.ts';
import { createNodeSession, ort } from './ort-node.ts';

/** A file the card names, inside `dir` only (the card is data). */
function inside(dir: string, file: string, what: string): string {
  const path = resolve(dir, file);
  const rel = relative(resolve(dir), path);
  if (file === '' || isAbsolute(file) || rel.startsWith('..') || isAbsolute(rel))
    throw new Error(`${join(dir, MODEL_CARD_FILE)}: ${what} '${file}' must name a file inside the model directory`);
  return path;
}

/** Reads and validates `dir/model-card.json` as a language model's card. */
export async function readLmCard(dir: string): Promise<LmCard> {
  const path = join(dir, MODEL_CARD_FILE);
  return parseLmCard(new TextDecoder().decode(await readModelFile(dir, MODEL_CARD_FILE, 'card')), path);
}

/**
 * @throws Error naming the path of a missing or corrupt card or graph (a graph whose size differs
 *   from the card's record is refused before onnxruntime reads it)
 */
export async function loadLmModelDir(
  dir: string,
  opts: { intraOpNumThreads?: number; graphs?: ReadonlyMap<string, Uint8Array> } = {},
): Promise<LmRuntime> {
  const card = await readLmCard(dir);
  const stepPath = inside(dir, card.graphs.step.file, 'graphs.step.file');
  await checkModelFiles(dir, cardFiles(card));
  const step = await readGraph(dir, card, card.graphs.step.file, opts.graphs);
  return LmRuntime.create({
    ort,
    card,
    step,
    createSession: async (bytes) => {
      try {
        return await createNodeSession(bytes, { intraOpNumThreads: opts.intraOpNumThreads ?? 0 });
      } catch (err) {
        throw new Error(`${stepPath}: onnxruntime cannot load it (${(err as Error).message.split('\n')[0]})`, {
          cause: err,
        });
      }
    },
    files: (file) => readModelFile(dir, file, 'file', card.files[file]?.bytes),
    locate: (file) => join(dir, file),
  });
}
