/**
 * koffi, the FFI through which frost calls native libraries in place on the wasm heap (the system BLAS, onnxruntime's
 * C API), typed for the parts frost uses. An optional native addon with prebuilt binaries in its npm package: where
 * it does not load, the callers report why and fall back.
 */
import { createRequire } from 'node:module';

export type KoffiFunction = (...args: unknown[]) => unknown;

export interface KoffiLib {
  func(definition: string): KoffiFunction;
  unload?(): void;
}

export interface Koffi {
  load(path: string): KoffiLib;
  proto(definition: string): unknown;
  array(type: string, length: number): unknown;
  decode(pointer: unknown, type: unknown): unknown;
}

/** The koffi module, or an Error saying why it does not load. */
export function loadKoffi(): Koffi | Error {
  try {
    return createRequire(import.meta.url)('koffi') as Koffi;
  } catch (e) {
    return new Error(`koffi does not load (${e instanceof Error ? e.message.split('\n')[0] : String(e)})`);
  }
}
