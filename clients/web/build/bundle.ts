/**
 * Bundles the web client (clients/web/src) with esbuild, in memory. `frost serve` builds it on the
 * first request for the page and `npm run build:web` writes the same files to disk, so both serve
 * one build. Node only.
 */
import { readFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Plugin } from 'esbuild';

/** The browser sources: index.html, style.css and the TypeScript entry main.ts. */
const WEB_SOURCE_DIR = fileURLToPath(new URL('../src/', import.meta.url));

/** One file of the built page. */
export interface WebAsset {
  contents: Uint8Array;
  contentType: string;
}

/** The built page. */
export interface WebBundle {
  /** Files by page-relative path: `index.html`, `app/main.js`, `app/chunk-*.js`, `app/style.css`. */
  files: Map<string, WebAsset>;
  /** Every source file that went into the scripts, relative to the repository root (for checks). */
  inputs: string[];
}

/** Options of {@link bundleWebApp}. */
export interface BundleOptions {
  /** @default true */
  minify?: boolean;
  /** The entry module. @default clients/web/src/main.ts */
  entry?: string;
}

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

/**
 * Refuses Node modules in the browser bundle, so a stray import fails the build rather than the
 * page. The one exception is onnxruntime-web's own Node code path (it reads files with node:fs when
 * run under Node), which sits behind a runtime check and never runs in a browser.
 */
const browserOnly: Plugin = {
  name: 'frost-browser-only',
  setup(build) {
    build.onResolve({ filter: /^(node:|onnxruntime-node$)/ }, (args) => {
      if (args.importer.includes(`${sep}node_modules${sep}onnxruntime-web${sep}`))
        return { path: args.path, external: true };
      return {
        errors: [
          {
            text: `'${args.path}' is a Node module and cannot be part of the web client (imported by ${relative(REPO_ROOT, args.importer)})`,
          },
        ],
      };
    });
  },
};

/**
 * Lets esbuild tree-shake zod. The shared card schema imports `{ z }`, a namespace object esbuild
 * cannot shake through, which pulls every zod locale into the page (about 450 kB minified). zod's
 * index also exports each member of `z` at top level, so `import * as z from 'zod'` names the same
 * functions, and with it esbuild keeps only those used (about 80 kB).
 */
const shakeableZod: Plugin = {
  name: 'frost-shakeable-zod',
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, async (args) => {
      if (args.path.includes(`${sep}node_modules${sep}`)) return undefined;
      const source = await readFile(args.path, 'utf8');
      return { contents: source.replace(/^import \{ z \} from 'zod';$/m, "import * as z from 'zod';"), loader: 'ts' };
    });
  },
};

/**
 * Builds the page: main.ts and its imports as ES modules (one chunk per ONNX Runtime build, loaded
 * on demand), plus index.html and style.css as they are.
 * @throws Error listing esbuild's messages when the build fails
 */
export async function bundleWebApp(opts: BundleOptions = {}): Promise<WebBundle> {
  // esbuild comes with tsx (a runtime dependency); imported lazily so servers that never serve
  // the page never load it.
  const esbuild = await import('esbuild');
  const outdir = join(WEB_SOURCE_DIR, '.out', 'app');
  let result;
  try {
    result = await esbuild.build({
      entryPoints: [opts.entry ?? join(WEB_SOURCE_DIR, 'main.ts')],
      bundle: true,
      format: 'esm',
      splitting: true,
      platform: 'browser',
      target: 'es2022',
      // onnxruntime-web's "extern wasm" builds import their wasm glue from env.wasm.wasmPaths at run
      // time instead of inlining it, so ORT's workers start from a real URL on our server.
      conditions: ['onnxruntime-web-use-extern-wasm'],
      minify: opts.minify ?? true,
      legalComments: 'none',
      outdir,
      entryNames: '[name]',
      chunkNames: 'chunk-[hash]',
      write: false,
      metafile: true,
      logLevel: 'silent',
      plugins: [browserOnly, shakeableZod],
    });
  } catch (err) {
    const errors = (err as { errors?: Array<{ text: string; location?: { file: string; line: number } | null }> })
      .errors;
    if (!errors) throw err;
    const lines = errors.map((e) => (e.location ? `${e.location.file}:${e.location.line}: ${e.text}` : e.text));
    throw new Error(`web client build failed:\n${lines.join('\n')}`, { cause: err });
  }
  const files = new Map<string, WebAsset>();
  for (const out of result.outputFiles) {
    const path = `app/${relative(outdir, out.path).split(sep).join('/')}`;
    files.set(path, { contents: out.contents, contentType: contentType(path) });
  }
  for (const [name, path] of [
    ['index.html', 'index.html'],
    ['style.css', 'app/style.css'],
  ] as const) {
    files.set(path, { contents: await readFile(join(WEB_SOURCE_DIR, name)), contentType: contentType(path) });
  }
  const inputs = Object.keys(result.metafile.inputs);
  return { files, inputs };
}

function contentType(path: string): string {
  const ext = path.slice(path.lastIndexOf('.'));
  return CONTENT_TYPES[ext] ?? 'application/octet-stream';
}
