/**
 * The onnxruntime-web files the page loads at run time, served by frost itself (never a CDN).
 * The page imports ORT's JavaScript API from its own bundle; what ORT then fetches is the wasm
 * binary and its small `.mjs` glue (which also starts ORT's worker threads), for the two builds
 * the page uses: plain wasm, and the asyncify build that carries the WebGPU provider.
 */
import { createRequire } from 'node:module';
import { dirname } from 'node:path';

/** File names under the URL prefix the page sets as `ort.env.wasm.wasmPaths` (`ort/`). */
export const ORT_RUNTIME_FILES: readonly string[] = [
  'ort-wasm-simd-threaded.mjs',
  'ort-wasm-simd-threaded.wasm',
  'ort-wasm-simd-threaded.asyncify.mjs',
  'ort-wasm-simd-threaded.asyncify.wasm',
];

/** The folder of the installed onnxruntime-web that holds {@link ORT_RUNTIME_FILES}. */
export function ortDistDir(): string {
  // The package exports its wasm files by name (not its package.json), so resolve one of those.
  return dirname(createRequire(import.meta.url).resolve('onnxruntime-web/ort-wasm-simd-threaded.wasm'));
}

/** Content type of an ORT runtime file; `application/wasm` lets the browser compile while downloading. */
export function ortContentType(file: string): string {
  return file.endsWith('.wasm') ? 'application/wasm' : 'text/javascript; charset=utf-8';
}
