/**
 * What a family of model (core/runtime/card-kinds.ts: `seq2seq`, `lm`) is on the server, registered by the
 * family's own file (served-families.ts imports them all): how one of its folders loads on a thread, which
 * batches a decode thread decodes with it, and how `/v1/models` and `/readyz` list its models. The decode
 * threads, the registry's in-process loader and the routes ask this registry rather than test a model's task,
 * so a new family is its own file and one import.
 */
import { Registry } from '../core/registry.ts';
import type { ModelFamily } from '../core/runtime/card-kinds.ts';
import type { LoadModelOptions } from '../core/runtime/load-node.ts';
import type { LmModelSummary, ModelSummary } from '../core/wire.ts';
import { readModelFolder } from './model-folders.ts';
import type { AnyRuntime } from './model-registry.ts';
import type { BatchMessage, FromWorker } from './worker-protocol.ts';

/** What a decode thread lends its family's batch handlers (serve/decode-worker.ts). */
export interface DecodeThreadScope {
  post(msg: FromWorker): void;
  /** The rows of batch `id` whose requests have gone, as `cancel` messages say, until the batch settles. */
  dropped(id: number): ReadonlySet<number>;
  /** Sends `finished` or `failed` for batch `id` once `decoding` settles, after its per-input messages. */
  settle(id: number, decoding: Promise<unknown>): void;
}

/** Decodes one batch with the thread's runtime, posting the batch's per-input messages. */
export type BatchHandler<R, M extends BatchMessage = BatchMessage> = (
  runtime: R,
  msg: M,
  thread: DecodeThreadScope,
) => void;

/** A family's batch handlers by message type; a thread refuses the types its family leaves out. */
export type BatchHandlers<R> = { [T in BatchMessage['type']]?: BatchHandler<R, Extract<BatchMessage, { type: T }>> };

/** The serve side of one family of model. */
export interface ServedFamily<R extends AnyRuntime = AnyRuntime> {
  /** How a refusal names the family's models: `not a language model`. */
  readonly noun: string;
  /** Loads one model folder of the family on the calling thread: a decode thread's, or an in-process registry's. */
  load(dir: string, opts: LoadModelOptions): Promise<R>;
  /**
   * One short decode, which a decode thread runs before it says it is ready: onnxruntime allocates and plans on a
   * session's first run, and a model that loads but cannot decode is refused at start-up rather than failing its
   * first requests. A server is ready only once every thread of every model has warmed up.
   */
  warm(runtime: R): Promise<void>;
  readonly batches: BatchHandlers<R>;
  /** How `/v1/models` and `/readyz` list the family's models. */
  readonly listing: {
    /** The key of their summaries in `/v1/models` and of their names in `/readyz`. */
    readonly key: 'models' | 'language_models';
    /** The key of their default in `/v1/models`. */
    readonly defaultKey: 'default' | 'default_language_model';
    /** Listed (empty) when none is loaded, rather than left out. */
    readonly always: boolean;
    /** The card without what is too big to list (its vocabularies). */
    summarise(card: R['card']): ModelSummary | LmModelSummary;
  };
  /** The message of each of its models' start-up log line. */
  readonly loadedMessage: string;
}

const families = new Registry<ServedFamily>('model family');

/** Adds the serve side of a family; each family's file calls this once (served-families.ts imports them). */
export function registerServedFamily<R extends AnyRuntime>(name: ModelFamily, family: ServedFamily<R>): void {
  families.register(name, family as unknown as ServedFamily);
}

/** @throws RangeError naming the registered families when `name` is none of them */
export function servedFamily(name: ModelFamily): ServedFamily {
  return families.get(name);
}

/** The registered families, in registration order. */
export function servedFamilyNames(): ModelFamily[] {
  return families.names() as ModelFamily[];
}

/** The handler of batches of `type` in `family`, if it decodes them. */
export function batchHandler(family: ServedFamily, type: BatchMessage['type']): BatchHandler<AnyRuntime> | undefined {
  return family.batches[type] as BatchHandler<AnyRuntime> | undefined;
}

/**
 * Loads `dir` on the calling thread as its card's family loads (the in-process registry's default loader).
 * @throws Error naming the card when it is missing or invalid, or the file of a model that cannot be loaded
 */
export async function loadInProcess(dir: string, opts: LoadModelOptions = {}): Promise<AnyRuntime> {
  return servedFamily((await readModelFolder(dir)).kind.family).load(dir, opts);
}
