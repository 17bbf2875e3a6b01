/**
 * Large downloads (model graphs, the ONNX Runtime wasm) kept in Cache Storage, so a reload does not
 * fetch them again. One entry per URL, tagged with a version: an entry whose version differs (a
 * re-exported model, another ORT release) is fetched again and replaces the old one.
 */
import { fetchWithProgress, type ProgressListener } from './download.ts';

const CACHE_NAME = 'frost-files-v1';
const VERSION_HEADER = 'x-frost-version';

/** What {@link cachedFetch} got, and whether it came from the cache. */
export interface CachedBytes {
  bytes: Uint8Array;
  fromCache: boolean;
}

/**
 * The bytes at `url`, from Cache Storage when an entry with this `version` (and, if given, this
 * size) is there, else downloaded with progress and stored.
 * Cache Storage exists only in secure contexts (https, localhost, 127.0.0.1); elsewhere, and when
 * storing fails (quota), this is a plain download.
 */
export async function cachedFetch(
  url: string,
  version: string,
  onProgress: ProgressListener,
  expectedBytes?: number,
): Promise<CachedBytes> {
  const cache = await openCache();
  if (cache) {
    const hit = await cache.match(url);
    if (hit && hit.headers.get(VERSION_HEADER) === version) {
      const bytes = new Uint8Array(await hit.arrayBuffer());
      if (expectedBytes === undefined || bytes.length === expectedBytes) {
        onProgress(bytes.length, bytes.length);
        return { bytes, fromCache: true };
      }
    }
  }
  const bytes = await fetchWithProgress(url, onProgress, expectedBytes);
  if (cache) {
    const headers = { [VERSION_HEADER]: version, 'content-type': 'application/octet-stream' };
    // A full cache must not fail the load: the bytes are already here.
    await cache.put(url, new Response(bytes as Uint8Array<ArrayBuffer>, { headers })).catch(() => undefined);
  }
  return { bytes, fromCache: false };
}

/** Bytes the page made itself (not downloaded), stored under `key` (a same-origin URL) with this version, or null. */
export async function readDerived(key: string, version: string): Promise<Uint8Array | null> {
  const hit = await (await openCache())?.match(key);
  if (!hit || hit.headers.get(VERSION_HEADER) !== version) return null;
  return new Uint8Array(await hit.arrayBuffer());
}

/** Stores bytes the page made itself; a full cache only costs the next load the work again. */
export async function storeDerived(key: string, version: string, bytes: Uint8Array): Promise<void> {
  const headers = { [VERSION_HEADER]: version, 'content-type': 'application/octet-stream' };
  const response = new Response(bytes as Uint8Array<ArrayBuffer>, { headers });
  await (await openCache())?.put(key, response).catch(() => undefined);
}

/** Deletes every cached file. */
export async function clearFileCache(): Promise<void> {
  if (typeof caches !== 'undefined') await caches.delete(CACHE_NAME);
}

async function openCache(): Promise<Cache | undefined> {
  if (typeof caches === 'undefined') return undefined;
  try {
    return await caches.open(CACHE_NAME);
  } catch {
    return undefined; // e.g. storage disabled by the user
  }
}
