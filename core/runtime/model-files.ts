/**
 * A model folder's files, read as hostile input. A model comes from anywhere, and its card names the
 * files: any of them may be a link out of the folder (`notes.txt -> /etc/passwd`), a device
 * (`decoder.onnx -> /dev/zero`) or gigabytes. So a file is resolved, links and all, and must lie
 * inside the folder's own real path, be a regular file and fit its kind's size limit, all checked
 * before a byte of it is read; it is then read from the descriptor that was checked.
 *
 * Node only: the loaders (load-node.ts, load-lm-node.ts) and the server's file route use it.
 */
import { constants } from 'node:fs';
import { open, realpath, stat, type FileHandle } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { MODEL_CARD_FILE } from './model-card.ts';

/** What a file is to the loaders: its size limit depends on it. */
export type ModelFileKind = 'card' | 'graph' | 'file';

const MiB = 2 ** 20;

/** The most bytes a model folder's file of each kind may have. */
export const MODEL_FILE_LIMITS: Readonly<Record<ModelFileKind, number>> = {
  /** Two 100,000-token vocabularies fit with room to spare; a 50 MB card is refused unread. */
  card: 8 * MiB,
  /** ONNX's protobuf limit: a graph over 2 GiB keeps its weights in external data, which frost does not write. */
  graph: 2 ** 31 - 1,
  /** Any other file a card names (a subword model: about 1 MB for 32,000 pieces). */
  file: 64 * MiB,
};

/** A file the folder may not hand out; `reason` says why without naming server paths (clients see it). */
export class ModelFileError extends Error {
  /** The message without the path in front: the reason and what it resolved to. */
  readonly why: string;

  constructor(
    readonly path: string,
    readonly reason: string,
    detail?: string,
  ) {
    const why = `${reason}${detail ? ` (${detail})` : ''}`;
    super(`${path}: ${why}`);
    this.name = 'ModelFileError';
    this.why = why;
  }
}

/** A file that passed the checks. */
export interface CheckedModelFile {
  /** As the caller names it: the folder joined with the card's name. */
  path: string;
  /** Links resolved; inside the folder's real path. */
  real: string;
  size: number;
  mtime: Date;
  ino: number;
}

/** Every file a card names and what it is: the card itself, its graphs, its `files` and subword models. */
export function cardFiles(card: {
  graphs: Readonly<Record<string, { file: string }>>;
  files: Readonly<Record<string, unknown>>;
  subword?: { files: Readonly<Record<string, string>> };
}): Map<string, ModelFileKind> {
  const kinds = new Map<string, ModelFileKind>([[MODEL_CARD_FILE, 'card']]);
  for (const file of [...Object.keys(card.files), ...Object.values(card.subword?.files ?? {})])
    if (!kinds.has(file)) kinds.set(file, 'file');
  for (const { file } of Object.values(card.graphs)) kinds.set(file, 'graph');
  return kinds;
}

/**
 * Resolves `file` of the folder `dir` and checks it without reading it.
 * @throws ModelFileError naming the path: not found, outside the folder once links are resolved,
 *   not a regular file, or over the kind's limit
 */
export async function checkModelFile(dir: string, file: string, kind: ModelFileKind): Promise<CheckedModelFile> {
  const path = join(dir, file);
  if (file === '' || file.includes('\0') || isAbsolute(file) || !within(resolve(dir), resolve(dir, file)))
    throw new ModelFileError(path, 'not a file inside the model folder');
  const root = await realpath(dir).catch(() => undefined);
  if (root === undefined) throw new ModelFileError(path, 'the model folder is not there');
  let real: string;
  try {
    real = await realpath(path);
  } catch (err) {
    throw fsError(path, err);
  }
  if (!within(root, real)) throw new ModelFileError(path, 'it resolves outside the model folder', `to ${real}`);
  const info = await stat(real).catch((err: unknown) => {
    throw fsError(path, err);
  });
  if (info.isDirectory()) throw new ModelFileError(path, 'is a directory, expected a file');
  if (!info.isFile()) throw new ModelFileError(path, `not a regular file (${typeOf(info)})`);
  const limit = MODEL_FILE_LIMITS[kind];
  if (info.size > limit)
    throw new ModelFileError(path, `${info.size} bytes, over the limit of ${limit} bytes for a model ${kind}`);
  return { path, real, size: info.size, mtime: info.mtime, ino: info.ino };
}

/**
 * Checks every file a card names that is there (a missing one is reported by whatever reads it).
 * @throws ModelFileError for the first that fails
 */
export async function checkModelFiles(dir: string, files: ReadonlyMap<string, ModelFileKind>): Promise<void> {
  for (const [file, kind] of files) {
    await checkModelFile(dir, file, kind).catch((err: unknown) => {
      if (!(err instanceof ModelFileError && err.reason === NOT_FOUND)) throw err;
    });
  }
}

/**
 * Opens a checked file; the descriptor is the file that was checked (it is refused if the name was
 * pointed elsewhere in between). The caller closes the handle.
 * @throws ModelFileError as {@link checkModelFile}
 */
export async function openModelFile(
  dir: string,
  file: string,
  kind: ModelFileKind,
): Promise<{ file: CheckedModelFile; handle: FileHandle }> {
  const checked = await checkModelFile(dir, file, kind);
  // O_NOFOLLOW: the real path has no links left; O_NONBLOCK: a FIFO swapped in does not hang the open.
  // The flags are distinct bits, so their sum is their union.
  const flags = constants.O_RDONLY + (constants.O_NOFOLLOW ?? 0) + (constants.O_NONBLOCK ?? 0);
  let handle: FileHandle;
  try {
    handle = await open(checked.real, flags);
  } catch (err) {
    throw fsError(checked.path, err);
  }
  const info = await handle.stat().catch(async (err: unknown) => {
    await handle.close();
    throw fsError(checked.path, err);
  });
  if (!info.isFile() || info.ino !== checked.ino || info.size > MODEL_FILE_LIMITS[kind]) {
    await handle.close();
    throw new ModelFileError(checked.path, 'changed while it was being opened');
  }
  return { file: { ...checked, size: info.size, mtime: info.mtime }, handle };
}

/**
 * Reads a checked file whole. With `recorded` (the card's `files[file].bytes`), a file of another size is refused
 * before a byte of it is read: a 2 GiB file swapped in for a 10 MB graph costs a stat, not 2 GiB of memory.
 * @throws ModelFileError as {@link checkModelFile}, or naming both sizes when the file's differs from `recorded`
 */
export async function readModelFile(
  dir: string,
  file: string,
  kind: ModelFileKind,
  recorded?: number,
  allocate: (bytes: number) => Uint8Array = (bytes) => new Uint8Array(bytes),
): Promise<Uint8Array> {
  const { file: checked, handle } = await openModelFile(dir, file, kind);
  try {
    if (recorded !== undefined && checked.size !== recorded)
      throw new ModelFileError(checked.path, sizeMismatch(file, checked.size, recorded));
    const bytes = allocate(checked.size);
    let at = 0;
    while (at < bytes.length) {
      const { bytesRead } = await handle.read(bytes, at, bytes.length - at, at);
      if (bytesRead === 0) break;
      at += bytesRead;
    }
    return bytes.subarray(0, at);
  } finally {
    await handle.close();
  }
}

const NOT_FOUND = 'file not found';

/** Why a file of `size` bytes is refused when its card records another size. */
export function sizeMismatch(file: string, size: number, recorded: number): string {
  return `${size} bytes, but the model card records ${recorded} (files['${file}'].bytes): the file is truncated or does not belong to this card`;
}

/** The reason without the paths Node's message has (clients read reasons); the message keeps them. */
function fsError(path: string, err: unknown): ModelFileError {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'ENOTDIR') return new ModelFileError(path, NOT_FOUND);
  if (code === 'ELOOP') return new ModelFileError(path, 'a loop of links');
  return new ModelFileError(path, `cannot be read (${code ?? 'error'})`, (err as Error).message);
}

function typeOf(info: Awaited<ReturnType<typeof stat>>): string {
  if (info.isCharacterDevice()) return 'a character device';
  if (info.isBlockDevice()) return 'a block device';
  if (info.isFIFO()) return 'a FIFO';
  if (info.isSocket()) return 'a socket';
  return 'not a file';
}

/** Whether `path` lies strictly inside `dir` (both absolute and normalised). */
function within(dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}
