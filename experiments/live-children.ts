import { type ChildProcess, spawn, type SpawnOptions } from 'node:child_process';
import { SIGNALS_FORWARDED_ENV, signalExitStatus, STOP_SIGNALS, type StopSignal } from '../train/interrupt.ts';

/**
 * `frost experiment`'s child processes (trainers, exports) and what a stop signal does to them, the way a
 * process supervisor handles it (torchrun's agent, systemd's KillMode=mixed). SIGINT, SIGTERM or SIGHUP to the
 * experiment is forwarded to every live child; a trainer then saves where it is and exits 130/143/129
 * (train/interrupt.ts), no new child is started, and once the children are gone the experiment ends with
 * {@link ExperimentInterrupted}, whose message names the stopped runs. A second signal kills the children
 * at once (SIGKILL: nothing more is saved) and exits. Without this, a signal to the experiment alone left
 * its trainers running as orphans, and a rerun started a second trainer on their folders.
 *
 * Children are told (SIGNALS_FORWARDED_ENV, this process's pid) that their signals are forwarded, so the copy
 * of a terminal's Ctrl-C that reaches them directly and the forwarded one count as one stop, not as the
 * "second signal"; and a trainer whose experiment is killed outright (SIGKILL, nothing forwarded) notices
 * and stops as on SIGTERM, saving, rather than train on as an orphan.
 */

/** The experiment stopped by a signal after its children saved and exited; `exitCode` is 130 or 143. */
export class ExperimentInterrupted extends Error {
  readonly exitCode: number;

  constructor(
    readonly signal: StopSignal,
    message: string,
    /** False for a child that was never started because of the signal. */
    readonly started = true,
  ) {
    super(message);
    this.name = 'ExperimentInterrupted';
    this.exitCode = signalExitStatus(signal);
  }
}

export class LiveChildren {
  private readonly children = new Map<ChildProcess, string>();
  private noted: StopSignal | null = null;
  private watching = false;
  private readonly handler = (signal: NodeJS.Signals) => this.receive(signal as StopSignal);

  constructor(
    /** Where the notices go (the experiment's stderr). */
    private readonly write: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
    /** What ends the process on a second signal, or on a signal while no child runs. */
    private readonly exit: (code: number) => void = (code) => process.exit(code),
  ) {}

  /** The signal that stopped the experiment, or null. */
  get signal(): StopSignal | null {
    return this.noted;
  }

  /** Names of the children running now, in the order they started. */
  get running(): string[] {
    return [...this.children.values()];
  }

  /** Handles SIGINT, SIGTERM and SIGHUP from now until {@link unwatch}; outside it they keep Node's default. */
  watch(): void {
    if (this.watching) return;
    this.watching = true;
    for (const s of STOP_SIGNALS) process.on(s, this.handler);
  }

  unwatch(): void {
    this.watching = false;
    this.noted = null;
    for (const s of STOP_SIGNALS) process.off(s, this.handler);
  }

  /**
   * Spawns a child, tracked until it exits under `name` (the run it trains).
   * @throws ExperimentInterrupted once a signal has stopped the experiment: nothing new starts
   */
  spawn(name: string, command: string, args: string[], options: SpawnOptions): ChildProcess {
    this.refuseAfterStop(name);
    const env = this.watching
      ? { ...(options.env ?? process.env), [SIGNALS_FORWARDED_ENV]: String(process.pid) }
      : options.env;
    const child = spawn(command, args, { ...options, ...(env === undefined ? {} : { env }) });
    this.children.set(child, name);
    // 'exit', not 'close': the process is gone even while a grandchild may still hold its pipes.
    child.on('exit', () => this.children.delete(child));
    child.on('error', () => this.children.delete(child));
    return child;
  }

  /** @throws ExperimentInterrupted once a signal has stopped the experiment, naming `name` as not started */
  refuseAfterStop(name: string): void {
    if (this.noted)
      throw new ExperimentInterrupted(this.noted, `${name}: not started, the experiment was stopped`, false);
  }

  /** Stops as a signal would, from code (tests, a caller's own deadline). */
  receive(signal: StopSignal): void {
    const names = this.running;
    if (this.noted === null) {
      this.noted = signal;
      if (names.length === 0) {
        this.write(`frost experiment: ${signal}: stopped (no run was training); rerun the same command to go on`);
        this.exit(signalExitStatus(signal));
        return;
      }
      this.write(
        `frost experiment: ${signal}: stopping ${names.join(', ')}: each saves where it is, then exits; send it again to stop them at once, without saving`,
      );
      for (const child of this.children.keys()) child.kill(signal);
      return;
    }
    this.write(
      `frost experiment: second ${signal}: killed ${names.length === 0 ? 'nothing (no run was left)' : names.join(', ')} at once, without saving`,
    );
    for (const child of this.children.keys()) child.kill('SIGKILL');
    this.exit(signalExitStatus(signal));
  }
}

/** The children of this process's `frost experiment` (experiments/spawn-frost.ts spawns through it). */
export const liveChildren = new LiveChildren();
