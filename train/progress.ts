import cliProgress from 'cli-progress';

export interface ProgressSnapshot {
  epoch: number;
  batch: number;
  batches: number;
  loss: number;
  tokensPerSecond: number;
  /** Seconds left in this epoch at the current speed. */
  etaSeconds: number;
}

/**
 * A bar with loss, target tokens/s and ETA on a terminal; on anything else (CI, a log file) one
 * plain line every `logEverySeconds`, so logs stay readable.
 */
export class TrainingProgress {
  private bar: cliProgress.SingleBar | null = null;
  private lastLine = 0;
  private readonly tty: boolean;

  constructor(
    private readonly quiet = false,
    private readonly logEverySeconds = 30,
  ) {
    this.tty = Boolean(process.stderr.isTTY) && !quiet;
  }

  startEpoch(epoch: number, batches: number, startAt: number): void {
    if (!this.tty) return;
    this.bar?.stop();
    this.bar = new cliProgress.SingleBar(
      {
        format: `epoch ${epoch} [{bar}] {value}/{total} | loss {loss} | {tps} tok/s | ETA {etaText}`,
        stream: process.stderr,
        hideCursor: true,
      },
      cliProgress.Presets.shades_classic,
    );
    this.bar.start(batches, startAt, { loss: '-', tps: '-', etaText: '-' });
  }

  update(s: ProgressSnapshot): void {
    const payload = {
      loss: s.loss.toFixed(3),
      tps: Math.round(s.tokensPerSecond),
      etaText: formatSeconds(s.etaSeconds),
    };
    if (this.bar) {
      this.bar.update(s.batch, payload);
      return;
    }
    if (this.quiet) return;
    const now = Date.now();
    if (now - this.lastLine < this.logEverySeconds * 1000 && s.batch !== s.batches) return;
    this.lastLine = now;
    process.stderr.write(
      `epoch ${s.epoch} batch ${s.batch}/${s.batches} loss ${payload.loss} ${payload.tps} tok/s ETA ${payload.etaText}\n`,
    );
  }

  endEpoch(): void {
    this.bar?.stop();
    this.bar = null;
  }

  log(line: string): void {
    if (!this.quiet) process.stderr.write(`${line}\n`);
  }
}

function formatSeconds(s: number): string {
  if (!Number.isFinite(s)) return '-';
  const m = Math.floor(s / 60);
  const sec = Math.round(s % 60);
  return m > 0 ? `${m}m${String(sec).padStart(2, '0')}s` : `${sec}s`;
}
