import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { collectParams, collectTensors, saveCheckpoint, type HasParams } from './checkpoint.ts';
import type { Adam } from './optim/adam.ts';
import type { ParameterAverage } from './optim/parameter-average.ts';
import { RUN_FILES } from './run-config.ts';
import { epochCheckpointDir, listEpochCheckpoints } from './run-folder.ts';

/**
 * The checkpoints a training run writes: `last` (to resume from) and `best` (by validation), both
 * with Adam's moments, and `epoch-NNNN` after each whole epoch, the parameters alone (a third of a
 * full one) for `frost export --average-last`; of those only the newest `keepLast` stay.
 * `state` is the trainer's JSON state, saved beside the tensors and handed back on resume. A run that
 * averages its weights (`--ema-decay`) saves the average in every one of them too (`ema/<name>`).
 */
export class RunCheckpoints {
  constructor(
    private readonly runDir: string,
    private readonly model: HasParams,
    private readonly optimizer: Adam,
    private readonly keepLast: number,
    private readonly average: ParameterAverage | null = null,
  ) {}

  async save(which: 'last' | 'best', state: object): Promise<void> {
    const dir = join(this.runDir, which === 'last' ? RUN_FILES.last : RUN_FILES.best);
    await saveCheckpoint(
      dir,
      [...collectTensors(this.model, this.optimizer), ...(this.average?.collect() ?? [])],
      state as Record<string, unknown>,
    );
  }

  async saveEpoch(epoch: number, state: object): Promise<void> {
    await saveCheckpoint(
      epochCheckpointDir(this.runDir, epoch),
      [...collectParams(this.model), ...(this.average?.collect() ?? [])],
      state as Record<string, unknown>,
    );
    const kept = listEpochCheckpoints(this.runDir);
    for (const old of kept.slice(0, Math.max(0, kept.length - this.keepLast)))
      await rm(old.dir, { recursive: true, force: true });
  }
}
