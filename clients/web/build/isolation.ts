/**
 * Headers that make the page cross-origin isolated, which gives it SharedArrayBuffer and so ONNX
 * Runtime's wasm threads. They go on every page file, not just the HTML: an isolated page refuses
 * a worker script that lacks COEP. `frost serve` sends them; the static build writes them to
 * `_headers` for hosts that read that file.
 */
export const ISOLATION_HEADERS: Readonly<Record<string, string>> = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
  'Cross-Origin-Resource-Policy': 'same-origin',
};
