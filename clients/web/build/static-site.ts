/**
 * `npm run build:web [-- --out DIR]`: writes the web client as static files (default `dist/web/`),
 * to host on any static file server. Layout:
 *
 *   index.html, app/ (scripts, style), ort/ (onnxruntime-web's wasm files), _headers
 *
 * Threads need the host to send the cross-origin isolation headers; `_headers` spells them in the
 * format Netlify and Cloudflare Pages read. Without a frost server there is no model list: open
 * the page with `?model=<model folder URL>` or type the URL in.
 */
import { copyFile, mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWebApp } from './bundle.ts';
import { ISOLATION_HEADERS } from './isolation.ts';
import { ORT_RUNTIME_FILES, ortDistDir } from './ort-files.ts';

/** What {@link writeStaticSite} wrote. */
export interface StaticSite {
  outDir: string;
  /** Written files, relative to `outDir`. */
  files: string[];
}

/** Builds the page into `outDir`, replacing what was there. */
export async function writeStaticSite(outDir: string): Promise<StaticSite> {
  const { files } = await bundleWebApp();
  await rm(outDir, { recursive: true, force: true });
  const written: string[] = [];
  for (const [path, asset] of files) {
    await mkdir(dirname(join(outDir, path)), { recursive: true });
    await writeFile(join(outDir, path), asset.contents);
    written.push(path);
  }
  await mkdir(join(outDir, 'ort'), { recursive: true });
  for (const file of ORT_RUNTIME_FILES) {
    await copyFile(join(ortDistDir(), file), join(outDir, 'ort', file));
    written.push(`ort/${file}`);
  }
  const headers = Object.entries(ISOLATION_HEADERS).map(([k, v]) => `  ${k}: ${v}`);
  await writeFile(join(outDir, '_headers'), ['/*', ...headers, ''].join('\n'));
  written.push('_headers');
  return { outDir, files: written.sort() };
}

async function main(argv: string[]): Promise<void> {
  const at = argv.indexOf('--out');
  const outDir = resolve(at >= 0 && argv[at + 1] ? argv[at + 1] : 'dist/web');
  const site = await writeStaticSite(outDir);
  process.stdout.write(`wrote ${site.files.length} files to ${site.outDir}\n`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`build:web: ${(err as Error).message}\n`);
    process.exitCode = 1;
  });
}
