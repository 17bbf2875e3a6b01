import { constants } from 'node:os';

/**
 * Ctrl-C and `kill` during training, made lossless the way preemption-aware trainers do it (PyTorch
 * Lightning on SIGTERM): the epoch loop (training-loop.ts) watches SIGINT and SIGTERM while it trains,
 * notes the first one, finishes the update in progress, saves `last` and throws `TrainingInterrupted`,
 * whose exit status the CLI exits with. A second signal means the user will not wait for the save: the
 * process ends at once (its `last` checkpoint is then the one before, which a save never half-replaces).
 */

// SIGHUP too: a closed terminal or a dropped ssh session would otherwise end a run without its save.
export type StopSignal = 'SIGINT' | 'SIGTERM' | 'SIGHUP';

export const STOP_SIGNALS: readonly StopSignal[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/**
 * Set to its own pid in a trainer's environment by a parent that forwards SIGINT and SIGTERM to it and
 * escalates by itself (`frost experiment`, experiments/live-children.ts): a repeated signal is then the
 * same stop, not a second one; and a parent that is gone (killed outright, with nothing forwarded) stops the
 * run as SIGTERM would, instead of leaving it training as an orphan.
 */
export const SIGNALS_FORWARDED_ENV = 'FROST_SIGNALS_FORWARDED';

/** How often a trainer whose signals are forwarded checks that its parent still runs (one getppid call). */
const PARENT_CHECK_MS = 1000;

/** Watches started and not stopped: while there is one, it owns SIGINT and SIGTERM (train/run-lock.ts defers to it). */
let activeWatches = 0;

/** Whether an {@link InterruptWatch} is noting signals now. */
export function interruptWatchActive(): boolean {
  return activeWatches > 0;
}

/** The shell's status for a process ended by `signal`: 128 + its number (130 SIGINT, 143 SIGTERM, 129 SIGHUP). */
export function signalExitStatus(signal: StopSignal): number {
  return 128 + constants.signals[signal];
}

/** A run stopped by a signal after saving where it was; `exitCode` is the conventional status. */
export class TrainingInterrupted extends Error {
  readonly exitCode: number;

  constructor(
    readonly signal: StopSignal,
    message: string,
  ) {
    super(message);
    this.name = 'TrainingInterrupted';
    this.exitCode = signalExitStatus(signal);
  }
}

/**
 * Notes SIGINT, SIGTERM and SIGHUP from `start()` to `stop()`; outside that window they keep Node's default
 * (the process ends). The loop polls `signal` between updates.
 */
export class InterruptWatch {
  private noted: StopSignal | null = null;
  private started = false;
  private parentCheck: NodeJS.Timeout | null = null;
  private readonly handler = (signal: NodeJS.Signals) => this.receive(signal as StopSignal);
  // A `frost experiment` that is gone (or a reader that closed the pipe first) leaves a run's stderr without
  // a reader: once a stop is noted, a write to the closed pipe must not end a run before it has saved. (Not
  // before: a run whose reader is gone for another reason should still fail at its next line, not train on
  // unwatched.)
  private readonly ignoreClosedStderr = () => undefined;

  /** The first signal received, or null. */
  get signal(): StopSignal | null {
    return this.noted;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    activeWatches++;
    for (const s of STOP_SIGNALS) process.on(s, this.handler);
    const parent = Number(process.env[SIGNALS_FORWARDED_ENV]);
    if (Number.isInteger(parent) && parent > 1) {
      // Linux has PR_SET_PDEATHSIG for this, Node has no binding; process.ppid is read afresh on each access.
      this.parentCheck = setInterval(() => {
        if (process.ppid !== parent) this.parentGone(parent);
      }, PARENT_CHECK_MS);
      this.parentCheck.unref();
    }
  }

  stop(): void {
    if (this.started) activeWatches--;
    this.started = false;
    if (this.parentCheck) clearInterval(this.parentCheck);
    this.parentCheck = null;
    for (const s of STOP_SIGNALS) process.off(s, this.handler);
    process.stderr.off('error', this.ignoreClosedStderr);
  }

  /** The parent that forwarded signals is gone: stop as on SIGTERM, which it would have forwarded. */
  private parentGone(parent: number): void {
    if (this.parentCheck) clearInterval(this.parentCheck);
    this.parentCheck = null;
    if (this.noted !== null) return;
    this.noted = 'SIGTERM';
    process.stderr.on('error', this.ignoreClosedStderr);
    process.stderr.write(`frost: the process that started this run (pid ${parent}) is gone: saving where the run is\n`);
  }

  private receive(signal: StopSignal): void {
    if (this.noted === null) {
      this.noted = signal;
      process.stderr.on('error', this.ignoreClosedStderr);
      // At once: a validation under way (minutes, for captions) is finished before the save.
      process.stderr.write(
        `frost: ${signal}: saving where the run is; send it again to stop at once, without saving\n`,
      );
      return;
    }
    // Under `frost experiment`, which forwards its signals, the same stop often arrives twice (a terminal's
    // Ctrl-C or a service manager's stop reaches the whole process group, then the experiment forwards it):
    // the experiment escalates itself, with SIGKILL, on its own second signal.
    if ((process.env[SIGNALS_FORWARDED_ENV] ?? '') !== '') {
      process.stderr.write(
        `frost: ${signal} again: already saving (a second signal to frost experiment stops at once)\n`,
      );
      return;
    }
    process.stderr.write(`frost: second ${signal}: stopped at once, without saving\n`);
    process.exit(signalExitStatus(signal));
  }
}

/** `frost train --resume DIR`, with DIR quoted for a POSIX shell when it needs to be. */
export function resumeCommand(runDir: string): string {
  const dir = /^[\w@%+=:,./-]+$/.test(runDir) ? runDir : `'${runDir.replaceAll("'", "'\\''")}'`;
  return `frost train --resume ${dir}`;
}

/**
 * One event-loop turn, in which pending signals' handlers run; the epoch loop takes one per update. A
 * bare turn costs about 1 µs (100k in 107-125 ms, Node 20, the 2-core dev VM); inside a tiny rnn-attn
 * run (batches of 4, 12-90 ms an update on the loaded VM) the median turn took 60-70 µs and one in ten
 * a few ms, V8's deferred GC tasks running there instead of later. Four interleaved pairs of 3-epoch
 * runs with and without the turn averaged 11.1 and 12.6 ms an update: no cost above the machine's noise.
 */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
