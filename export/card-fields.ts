import { basename } from 'node:path';
import { gzipSync } from 'node:zlib';
import { tempSiblingOf } from '../core/temp-sibling.ts';
import { SPECIALS } from '../core/vocab.ts';
import type { LanguageModel } from '../models/index.ts';
import type { ExportSource } from './task-parts.ts';

/* The card fields every task's export writes the same way (seq2seq-export.ts, lm-parts.ts). */

/** The special tokens' ids, as every card records them. */
export const specials = { pad: SPECIALS.pad.id, unk: SPECIALS.unk.id, bos: SPECIALS.bos.id, eos: SPECIALS.eos.id };

/** The card's `params`: learnable, frozen and generated parameters, and by component. */
export function paramCounts(model: Pick<LanguageModel, 'params' | 'head'>, storeFrozen: boolean) {
  const counts = model.params.counts();
  return {
    learnable: counts.learnable,
    frozen: counts.frozen,
    generated: model.head.generatedParams?.(storeFrozen) ?? 0,
    byComponent: model.params.countsByComponent(),
  };
}

/** The card's `files`: each file's size, plain and gzipped. */
export function fileSizes(files: Record<string, Uint8Array>): Record<string, { bytes: number; gzipBytes: number }> {
  return Object.fromEntries(
    Object.entries(files).map(([file, bytes]) => [file, { bytes: bytes.length, gzipBytes: gzipSync(bytes).length }]),
  );
}

/** The card's `config.checkpoint`: which checkpoint (or which averaged ones), at what step and epoch. */
export function checkpointCard(source: ExportSource): Record<string, unknown> {
  const state = source.checkpoint.state as { step?: number; epoch?: number };
  return source.averaged
    ? {
        which: `average-last-${source.averaged.length}`,
        step: state.step,
        epoch: state.epoch,
        averaged: source.averaged.map((c) => ({ epoch: c.epoch, dir: basename(c.dir), sha256: c.sha256 })),
      }
    : { which: checkpointName(source.dir), step: state.step, epoch: state.epoch };
}

/** The checkpoint a folder holds, by its name: `best` for `best`, and for `best.old-4242` that a killed save left. */
export function checkpointName(dir: string): string {
  const name = basename(dir);
  return tempSiblingOf(name)?.base ?? name;
}
