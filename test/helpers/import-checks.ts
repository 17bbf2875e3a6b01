/**
 * What the import tests (import-marian, import-fairseq) share: their PyTorch helpers run and the sentences they
 * translate; the card's provenance checked against the source folder; every hostile folder refused with one line
 * matching the reason, leaving neither the run folder nor a temporary one; and how they damage a copy's weights
 * (model.safetensors rewritten through frost's own writer).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { serialiseSafetensors } from '../../core/safetensors/format.ts';
import { readSafetensors } from '../../core/safetensors/node-file.ts';
import { ImportRefused } from '../../train/import/import-files.ts';

/**
 * Runs a PyTorch helper script with `python` (findTorchPython); its stdout, or an error with its stderr. No bytecode
 * is written: the helpers import their neighbours (marian_files.py), which would leave __pycache__ in the tree.
 */
export function runTorchPython(python: string, args: string[], env: NodeJS.ProcessEnv = {}): string {
  const r = spawnSync(python, args, {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1', ...env },
  });
  if (r.status !== 0) throw new Error(`${args.join(' ')} failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}

/** The first `n` sentences of Multi30k's test2016 (`data`): German sources and their English references. */
export function flickrSentences(data: string, n: number): { sentences: string[]; references: string[] } {
  const lines = (lang: string) =>
    gunzipSync(readFileSync(join(data, `test_2016_flickr.${lang}.gz`)))
      .toString('utf8')
      .split('\n')
      .slice(0, n);
  return { sentences: lines('de'), references: lines('en') };
}

/** The card's `imported` provenance: its format, its source folder `from`, and each of `files`' SHA-256 there. */
export function assertProvenance(imported: unknown, format: string, from: string, files: readonly string[]): void {
  const {
    format: f,
    from: dir,
    files: hashes,
  } = imported as {
    format: string;
    from: string;
    files: Record<string, { sha256: string }>;
  };
  assert.equal(f, format);
  assert.equal(dir, from);
  for (const file of files) {
    const sha = createHash('sha256')
      .update(readFileSync(join(from, file)))
      .digest('hex');
    assert.equal(hashes[file]?.sha256, sha, file);
  }
}

/** `importFrom(dir, out)` is refused with one line matching `pattern`, and writes nothing at `out`. */
export async function assertImportRefused(
  importFrom: (dir: string, out: string) => Promise<unknown>,
  dir: string,
  out: string,
  pattern: RegExp,
): Promise<string> {
  const err = await importFrom(dir, out).then(
    () => assert.fail('the import was not refused'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ImportRefused, `not an ImportRefused: ${String(err)}`);
  assert.match(err.message, pattern);
  assert.ok(!err.message.includes('\n'), `more than one line: ${err.message}`);
  assert.ok(!existsSync(out), 'the refused import wrote its run folder');
  assert.ok(!existsSync(`${out}.tmp-${process.pid}`), 'the refused import left a temporary folder');
  return err.message;
}

export type EditableTensors = Record<string, { shape: readonly number[]; data: Float32Array }>;

/** Rewrites `dir`'s model.safetensors through `edit` (name → tensor). */
export async function editTensors(dir: string, edit: (t: EditableTensors) => void): Promise<void> {
  const file = await readSafetensors(join(dir, 'model.safetensors'));
  const tensors: EditableTensors = {};
  for (const name of file.entries.keys()) tensors[name] = file.tensor(name);
  edit(tensors);
  writeFileSync(join(dir, 'model.safetensors'), serialiseSafetensors(tensors, { format: 'pt' }));
}
