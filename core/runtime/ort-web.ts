/**
 * onnxruntime-web, in one place: the two builds the browser page picks from, and the package's Node
 * build, on which tests check that the browser's runtime computes what onnxruntime-node does.
 * Nothing else imports onnxruntime-web (test/import-graph.test.ts); onnxruntime-node is ort-node.ts's.
 * Reading the package's files (the .wasm the server hands the page: clients/web/build/ort-files.ts)
 * is not importing it.
 */

/** onnxruntime-web's API, the same in every build. */
export type OrtWeb = typeof import('onnxruntime-web');

/** The page's builds: plain wasm, or the larger asyncify one that adds the WebGPU execution provider. */
export type OrtWebBuild = 'wasm' | 'webgpu';

/**
 * Imports one of the page's builds. Each specifier is a literal, so the bundler makes each build a
 * chunk of its own, downloaded only by a page that asks for it.
 */
export function importOrtWeb(build: OrtWebBuild): Promise<OrtWeb> {
  return build === 'webgpu' ? import('onnxruntime-web/webgpu') : import('onnxruntime-web/wasm');
}

/**
 * The package's entry, which under Node is its Node build (dist/ort.node.min.mjs, reading the .wasm from
 * its own folder). Not a literal in the import below: the page never takes that path, and the bundler
 * leaves a computed specifier alone, so the page's bundle gets no chunk of a build it never loads.
 */
const NODE_ENTRY = 'onnxruntime-web';

/** onnxruntime-web under Node (tests), configured by the caller (e.g. `env.wasm.numThreads`). */
export async function importOrtWebInNode(): Promise<OrtWeb> {
  return (await import(NODE_ENTRY)) as OrtWeb;
}
