import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadLmModelDir } from '../core/runtime/load-lm-node.ts';
import type { LmRuntime } from '../core/runtime/lm.ts';
import { MODEL_CARD_FILE } from '../core/runtime/model-card.ts';
import { QueueFullError } from './decode-errors.ts';
import { clip, HttpError } from './errors.ts';

/**
 * The language models a server answers `/v1/complete` and `/v1/score` with. They have one step
 * graph and no encoder, so they run in-process on their own ORT session rather than through the
 * seq2seq decode threads and batcher (model-registry.ts); each model takes at most `concurrency`
 * requests at a time and queues up to `maxQueue` more (then 503 FROST_ERR_OVERLOADED, as the
 * batcher does).
 */
export interface LanguageModelEntry {
  name: string;
  dir?: string;
  runtime: LmRuntime;
}

/** Whether `dir` holds a language model's card (task 'lm'). */
export async function isLmModelDir(dir: string): Promise<boolean> {
  const path = join(dir, MODEL_CARD_FILE);
  if (!existsSync(path)) return false;
  try {
    return (JSON.parse(await readFile(path, 'utf8')) as { task?: unknown }).task === 'lm';
  } catch {
    return false;
  }
}

export class LanguageModels {
  private readonly models = new Map<string, LanguageModelEntry>();
  private readonly running = new Map<string, number>();
  private readonly waiting = new Map<string, Array<() => void>>();
  readonly defaultName: string | undefined;

  constructor(
    entries: readonly LanguageModelEntry[],
    private readonly opts: { concurrency?: number; maxQueue?: number; defaultModel?: string } = {},
  ) {
    for (const e of entries) {
      if (this.models.has(e.name)) throw new Error(`two language models are named '${e.name}'`);
      this.models.set(e.name, e);
    }
    const wanted = opts.defaultModel;
    this.defaultName =
      wanted !== undefined && this.models.has(wanted) ? wanted : entries.length === 1 ? entries[0].name : undefined;
  }

  /** The language models in `dir` (a model directory or a directory of them); other models are skipped. */
  static async load(
    dir: string,
    opts: { intraOpNumThreads?: number; defaultModel?: string } = {},
  ): Promise<LanguageModels> {
    const dirs = (await isLmModelDir(dir))
      ? [dir]
      : existsSync(dir)
        ? (await readdir(dir, { withFileTypes: true }))
            .filter((e) => e.isDirectory())
            .map((e) => join(dir, e.name))
            .sort()
        : [];
    const entries: LanguageModelEntry[] = [];
    for (const d of dirs) {
      if (!(await isLmModelDir(d))) continue;
      const runtime = await loadLmModelDir(d, opts);
      entries.push({ name: runtime.card.name, dir: d, runtime });
    }
    return new LanguageModels(entries, opts);
  }

  get names(): string[] {
    return [...this.models.keys()].sort();
  }

  /** @throws HttpError naming the loaded language models when `name` is none of them */
  get(name: string | undefined): LanguageModelEntry {
    const wanted = name ?? this.defaultName;
    const available = this.names.join(', ') || '(none)';
    if (wanted === undefined) throw new HttpError('FROST_ERR_NO_DEFAULT_MODEL', { available });
    const model = this.models.get(wanted);
    if (!model) throw new HttpError('FROST_ERR_UNKNOWN_MODEL', { model: clip(wanted), available });
    return model;
  }

  /** Runs `work` when one of the model's slots is free; a full queue is refused at once (QueueFullError). */
  async run<T>(name: string, work: () => Promise<T>): Promise<T> {
    const queue = this.waiting.get(name) ?? [];
    this.waiting.set(name, queue);
    const running = this.running.get(name) ?? 0;
    if (running >= (this.opts.concurrency ?? 4)) {
      if (queue.length >= (this.opts.maxQueue ?? 64)) throw new QueueFullError(queue.length);
      // The slot is handed over by the request that finishes (below), so no newcomer can take it first.
      await new Promise<void>((resolve) => queue.push(resolve));
    } else this.running.set(name, running + 1);
    try {
      return await work();
    } finally {
      const next = queue.shift();
      if (next) next();
      else this.running.set(name, this.running.get(name)! - 1);
    }
  }
}
