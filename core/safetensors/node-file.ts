/**
 * Reading a safetensors file from disk. The header is checked (format.ts) before the tensors' bytes are
 * read, and a tensor is decoded only when asked for, so a hostile file costs at most its header's bound
 * until its claims have been checked. (Writing is serialiseSafetensors's bytes through
 * train/atomic-write.ts's writeFileAtomic: core does not write models.)
 *
 * Node only.
 */
import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import {
  decodeTensor,
  headerLength,
  parseHeader,
  SafetensorsError,
  type SafetensorsEntry,
  type SafetensorsHeader,
} from './format.ts';

/** A checked safetensors file: its header, and its tensors decoded to float32 on request. */
export interface SafetensorsFile extends SafetensorsHeader {
  path: string;
  /** The whole file's SHA-256 (hex) and size, from the bytes read: provenance needs no second read. */
  sha256: string;
  bytes: number;
  /** The named tensor's values and shape; a name the file does not hold is refused with the path. */
  tensor(name: string): { shape: readonly number[]; data: Float32Array };
}

/** Reads and checks `path`: header first, then the data the header has been checked to describe. */
export async function readSafetensors(path: string): Promise<SafetensorsFile> {
  const handle = await open(path, 'r');
  let header: SafetensorsHeader;
  let data: Uint8Array;
  let sha256: string;
  let bytes: number;
  try {
    const { size } = await handle.stat();
    const first8 = new Uint8Array(8);
    await handle.read(first8, 0, Math.min(8, size), 0);
    const length = headerLength(first8, size, path);
    const headerBytes = new Uint8Array(length);
    await handle.read(headerBytes, 0, length, 8);
    header = parseHeader(headerBytes, size, path);
    data = new Uint8Array(size - header.dataStart);
    const { bytesRead } = await handle.read(data, 0, data.length, header.dataStart);
    if (bytesRead !== data.length)
      throw new SafetensorsError(path, `the file shrank while being read (${bytesRead} of ${data.length} data bytes)`);
    // The three reads tile the file: 8 length bytes, the header, the data to its end.
    sha256 = createHash('sha256').update(first8).update(headerBytes).update(data).digest('hex');
    bytes = size;
  } finally {
    await handle.close();
  }
  return {
    ...header,
    path,
    sha256,
    bytes,
    tensor(name: string) {
      const entry: SafetensorsEntry | undefined = header.entries.get(name);
      if (!entry) throw new SafetensorsError(path, `no tensor '${name}'`);
      return { shape: entry.shape, data: decodeTensor(entry, data.subarray(entry.begin, entry.end)) };
    },
  };
}
