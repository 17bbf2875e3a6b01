/**
 * What the import tests (import-marian, import-fairseq) check of every hostile folder: the import is refused with one
 * line matching the reason, and leaves neither the run folder nor a temporary one; and how they damage a copy's
 * weights (model.safetensors rewritten through frost's own writer).
 */
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serialiseSafetensors } from '../../core/safetensors/format.ts';
import { readSafetensors } from '../../core/safetensors/node-file.ts';
import { ImportRefused } from '../../train/import/import-files.ts';

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
