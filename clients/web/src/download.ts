/** Downloads with progress: fetch + the body's ReadableStream, so the page can draw a progress bar. */

/** Called as bytes arrive; `total` is undefined when neither the caller nor the server knows it. */
export type ProgressListener = (loaded: number, total: number | undefined) => void;

/**
 * Fetches `url` into memory, reporting progress chunk by chunk.
 * @param expectedBytes the size when known in advance (a model card records it); preferred over
 *   Content-Length, which counts compressed bytes when the server compresses
 * @throws Error naming the URL on an HTTP error, or when `expectedBytes` is given and the body differs
 */
export async function fetchWithProgress(
  url: string,
  onProgress: ProgressListener,
  expectedBytes?: number,
): Promise<Uint8Array> {
  const response = await fetch(url, { cache: 'no-cache' });
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status} ${response.statusText}`);
  const header = Number(response.headers.get('content-length'));
  const total = expectedBytes ?? (Number.isFinite(header) && header > 0 ? header : undefined);
  const chunks: Uint8Array[] = [];
  let loaded = 0;
  onProgress(0, total);
  if (response.body) {
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      loaded += value.length;
      onProgress(loaded, total);
    }
  } else {
    // No streaming body (old engines): one chunk, one progress step.
    const whole = new Uint8Array(await response.arrayBuffer());
    chunks.push(whole);
    loaded = whole.length;
    onProgress(loaded, total);
  }
  if (expectedBytes !== undefined && loaded !== expectedBytes) {
    throw new Error(`${url}: got ${loaded} bytes, expected ${expectedBytes}: the file is truncated or changed`);
  }
  return concat(chunks, loaded);
}

function concat(chunks: readonly Uint8Array[], length: number): Uint8Array {
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(length);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.length;
  }
  return out;
}
