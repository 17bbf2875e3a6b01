import { restoreTensors } from './checkpoint.ts';
import { type InterruptWatch, nextTurn, resumeCommand, TrainingInterrupted, type StopSignal } from './interrupt.ts';
import { appendMetrics, dropLostMetrics } from './metrics-log.ts';
import type { ParameterAverage } from './optim/parameter-average.ts';
import { RunCheckpoints } from './run-checkpoints.ts';
import type { EpochUpdates, LoopRun, LoopState } from './training-loop.ts';

/** What ended a budget: time, or the update count. */
type BudgetStop = Pick<LoopState, 'stopKind' | 'stopReason'>;

/** An epoch (or this session's part of it) after its updates, before its validation. */
interface EpochTrained {
  /** Its updates: their count is what `complete` checks, and `end` is called once they are done. */
  updates: EpochUpdates;
  epochStart: number;
  lossSum: number;
  lossTokens: number;
  /** The budget the last update used up; null when the epoch ran to its end or a signal stopped it. */
  budgetUsed: BudgetStop | null;
  interrupted: StopSignal | null;
}

/**
 * One session of {@link runEpochs}: the run's state (the checkpoint's, when resuming), the budgets and
 * the checkpoints this session saves. Its three steps are the loop's seams: resume (`start`), an
 * epoch's updates (`trainEpoch`) and its end (`endEpoch`: validation, schedule, metrics, checkpoints).
 */
export class LoopSession<S extends LoopState, V, M extends object> {
  private readonly checkpoints: RunCheckpoints;
  /** The step `last` holds, to save it once on a signal (null: this session has not saved and found none). */
  private savedStep: number | null;
  private sessionStart: number;
  private lastSave = Date.now();
  private readonly budgetMs: number;
  private readonly maxUpdates: number;

  private constructor(
    private readonly run: LoopRun<S, V, M>,
    private readonly average: ParameterAverage | null,
    readonly state: S,
  ) {
    const { config } = run;
    this.checkpoints = new RunCheckpoints(run.runDir, run.model, run.optimizer, config.keepLast, average);
    this.savedStep = run.checkpoint ? state.step : null;
    this.budgetMs = (config.maxMinutes ?? Infinity) * 60_000;
    this.maxUpdates = config.maxUpdates ?? Infinity;
    this.sessionStart = Date.now() - state.elapsedMs;
  }

  /** A session on the run's new state, or on its checkpoint's (tensors, state, schedule and optimiser restored). */
  static async start<S extends LoopState, V, M extends object>(
    run: LoopRun<S, V, M>,
    average: ParameterAverage | null,
  ): Promise<LoopSession<S, V, M>> {
    const state = run.checkpoint ? resumedState(run, run.checkpoint, average) : run.state;
    await dropLostMetrics(run.runDir, state.step);
    return new LoopSession(run, average, state);
  }

  private elapsed(): number {
    return Date.now() - this.sessionStart;
  }

  private snapshot(): S {
    return { ...this.state, schedule: this.run.schedule.state };
  }

  async saveLast(): Promise<void> {
    await this.checkpoints.save('last', this.snapshot());
    this.savedStep = this.state.step;
  }

  /** Which budget ended the run: time, or the update count (checked after every update, as time is). */
  budgetStop(): BudgetStop | null {
    const { config } = this.run;
    return this.state.step >= this.maxUpdates
      ? { stopKind: 'updates', stopReason: `reached ${config.maxUpdates} updates` }
      : this.elapsed() >= this.budgetMs
        ? { stopKind: 'time', stopReason: `time budget of ${config.maxMinutes} minutes used` }
        : null;
  }

  /** What a periodic save writes (so a resume continues at the next batch), then the signal's exit. */
  async stopOnSignal(signal: StopSignal): Promise<never> {
    const { state } = this;
    if (this.savedStep !== state.step) {
      state.elapsedMs = this.elapsed();
      await this.saveLast();
    }
    const where = `epoch ${state.epoch + 1}, ${this.run.task.unit} ${state.batch}, step ${state.step}`;
    throw new TrainingInterrupted(
      signal,
      `interrupted by ${signal} at ${where}: saved; resume with \`${resumeCommand(this.run.runDir)}\``,
    );
  }

  /** The epoch's updates from where the state stands, until its end, a budget or a signal. */
  async trainEpoch(interrupts: InterruptWatch): Promise<EpochTrained> {
    const { config, optimizer, schedule, progress, task } = this.run;
    const { state } = this;
    const updates = task.plan(state.epoch);
    progress.startEpoch(state.epoch + 1, updates.length, state.batch);
    const trained: EpochTrained = {
      updates,
      epochStart: Date.now(),
      lossSum: 0,
      lossTokens: 0,
      budgetUsed: null,
      interrupted: null,
    };
    const startBatch = state.batch;
    for (let i = state.batch; i < updates.length; i++) {
      optimizer.learningRate = schedule.rateAt(state.step + 1, optimizer.learningRate, this.elapsed());
      const { loss, tokens } = updates.train(i);
      if (!Number.isFinite(loss))
        throw new Error(`training diverged at step ${state.step + 1} (loss ${loss}); try a lower --lr`);
      state.step += 1;
      this.average?.update(state.step);
      state.batch = i + 1;
      trained.lossSum += loss * tokens;
      trained.lossTokens += tokens;
      const seconds = (Date.now() - trained.epochStart) / 1000;
      progress.update({
        epoch: state.epoch + 1,
        batch: i + 1,
        batches: updates.length,
        loss: trained.lossSum / trained.lossTokens,
        tokensPerSecond: trained.lossTokens / Math.max(seconds, 1e-3),
        // Batches done in this session (a resumed epoch starts at startBatch), not in the epoch.
        etaSeconds: ((updates.length - i - 1) * seconds) / Math.max(1, i + 1 - startBatch),
      });
      trained.budgetUsed = this.budgetStop();
      if (trained.budgetUsed) break;
      // updates.train never yields, so a signal's handler runs only here: one event-loop turn per update
      // (what it costs: nextTurn in train/interrupt.ts).
      await nextTurn();
      trained.interrupted = interrupts.signal;
      if (trained.interrupted) break;
      if (Date.now() - this.lastSave >= config.checkpointMinutes * 60_000) {
        state.elapsedMs = this.elapsed();
        await this.saveLast();
        this.lastSave = Date.now();
      }
    }
    updates.end?.();
    progress.endEpoch();
    return trained;
  }

  /** The epoch's validation, the schedule's verdict, its metrics line and the checkpoints after it. */
  async endEpoch(trained: EpochTrained): Promise<void> {
    const { runDir, config, optimizer, schedule, progress, task } = this.run;
    const { state, average } = this;
    const trainSeconds = Math.max((Date.now() - trained.epochStart) / 1000, 1e-3);
    // An epoch whose last batch used the budget is still whole.
    const complete = trained.budgetUsed === null || state.batch === trained.updates.length;
    // A signal during validation lets it finish (a task's decode cannot stop part-way): its metrics line
    // and checkpoints are written whole, then the loop stops at the top of the next epoch.
    const validation = await (average ? average.applied(() => task.validate()) : task.validate());
    const verdict = schedule.observe(task.score(validation), state.epoch, optimizer.learningRate);
    optimizer.learningRate = verdict.learningRate;
    if (verdict.note) progress.log(verdict.note);
    state.learningRate = optimizer.learningRate;
    task.keepBest(state, validation);
    if (complete) {
      state.epoch += 1;
      state.batch = 0;
    }
    if (verdict.stop)
      Object.assign(state, {
        done: true,
        stopKind: 'plateau',
        stopReason: `no validation gain for ${config.schedule.stopAfter} epochs`,
      });
    if (trained.budgetUsed && !state.done) Object.assign(state, { done: true, ...trained.budgetUsed });
    state.elapsedMs = this.elapsed();
    const { metrics, line } = task.report(
      {
        epoch: complete ? state.epoch : state.epoch + 1,
        step: state.step,
        complete,
        trainLoss: trained.lossTokens ? trained.lossSum / trained.lossTokens : NaN,
        tokens: trained.lossTokens,
        trainSeconds,
        epochSeconds: Math.max((Date.now() - trained.epochStart) / 1000, 1e-3),
        learningRate: state.learningRate,
        elapsedMinutes: state.elapsedMs / 60_000,
        best: verdict.improved,
      },
      validation,
    );
    await appendMetrics(runDir, metrics);
    progress.log(line);
    this.run.onEpoch?.(metrics);
    if (verdict.improved) await this.checkpoints.save('best', this.snapshot());
    await this.saveLast();
    if (complete && config.keepLast > 0) await this.checkpoints.saveEpoch(state.epoch, this.snapshot());
    this.lastSave = Date.now();
    this.sessionStart = Date.now() - state.elapsedMs;
  }
}

/** The checkpoint's state, with its tensors, schedule and optimiser settings restored into the run's. */
function resumedState<S extends LoopState, V, M extends object>(
  run: LoopRun<S, V, M>,
  checkpoint: NonNullable<LoopRun<S, V, M>['checkpoint']>,
  average: ParameterAverage | null,
): S {
  const { runDir, model, optimizer, schedule, progress, task } = run;
  restoreTensors(model, optimizer, checkpoint.tensors, runDir);
  average?.restore(checkpoint.tensors, runDir);
  const saved = checkpoint.state;
  // JSON has no Infinity: a best-so-far still ±Infinity (saved before the first validation) came back as null.
  for (const [key, value] of Object.entries(run.state))
    if (saved[key] === null && typeof value === 'number' && !Number.isFinite(value)) saved[key] = value;
  const state = saved as unknown as S;
  schedule.state = { ...state.schedule, best: state.schedule.best ?? -Infinity };
  optimizer.step = state.step;
  optimizer.learningRate = state.learningRate;
  if (state.done && state.stopKind !== 'plateau') state.done = false;
  progress.log(resumedLine(state, task.unit, checkpoint));
  return state;
}

/** The resume's log line: where in the run, from which checkpoint, and the leftovers of interrupted saves removed. */
function resumedLine(state: LoopState, unit: string, checkpoint: { from?: string; removed?: string[] }): string {
  const from = checkpoint.from === undefined ? '' : ` (from ${checkpoint.from})`;
  const removed = checkpoint.removed?.length
    ? `; removed what interrupted saves left: ${checkpoint.removed.join(', ')}`
    : '';
  return `resumed at epoch ${state.epoch + 1}, ${unit} ${state.batch}, step ${state.step}${from}${removed}`;
}
