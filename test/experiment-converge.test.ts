/**
 * `frost experiment mt-heads --max-epochs N` on the toy corpus, interrupted: the grid's process group is
 * killed once a run has validated an epoch, the same command is run again and must finish the grid from
 * the runs' checkpoints, and a third run must train nothing and write the same report. Then the grid as a
 * fresh clone sees it (a run folder gone, its row in the committed report): reused, not trained, and
 * `--report-only` reports what has finished without training the rest. Only the grid that is killed runs
 * bin/frost.js in a child (its process group is what is killed); the other commands run in this process as
 * the CLI registers them (helpers/frost-in-process.ts), their trainers still children as always.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { readReportedRuns, rowMismatch } from '../experiments/reported-runs.ts';
import { readMetrics } from '../report/run-status.ts';
import { type Report, reportSchema } from '../report/schema.ts';
import { readCheckpointInfo } from '../train/run-folder.ts';
import { frostInProcess } from './helpers/frost-in-process.ts';

const ROOT = join(import.meta.dirname, '..');
const HEADS = ['learned', 'fixed-l2'];
const EPOCHS = 3;

let out: string;

/** Whether any process of the group `pgid` is left (zombies count until they are reaped). */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs the experiment, in this process; with `killWhen`, in a child whose whole process group (the grid and its
 * trainers) is killed once it holds.
 */
async function experiment(
  killWhen?: () => Promise<boolean>,
  heads = HEADS,
  extra: string[] = [],
): Promise<{ code: number | null; stderr: string }> {
  const argv = ['experiment', 'mt-heads', '--data', 'toy', '--heads', heads.join(',')];
  argv.push('--max-epochs', String(EPOCHS), '--preset', 'tiny', '--beam', '2', '--out', out, ...extra);
  if (!killWhen) return frostInProcess(argv);
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'frost.js'), ...argv], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const closed = new Promise<number | null>((done) => child.on('close', done));
  let killed = false;
  const poll = async () => {
    while (child.exitCode === null && !killed) {
      if (await killWhen()) {
        killed = true;
        process.kill(-child.pid!, 'SIGKILL');
        return;
      }
      await sleep(200);
    }
  };
  await Promise.all([poll(), closed]);
  const code = await closed;
  // SIGKILL is delivered at once but a trainer takes a moment to exit; the rerun must not race its lock.
  for (let i = 0; killed && i < 100 && groupAlive(child.pid!); i++) await sleep(100);
  return { code: killed ? null : code, stderr };
}

const readReport = async (): Promise<Report> =>
  reportSchema.parse(JSON.parse(await readFile(join(out, 'report', 'report.json'), 'utf8')));

before(async () => {
  out = await mkdtemp(join(tmpdir(), 'frost-converge-'));
});

after(async () => {
  await rm(out, { recursive: true, force: true });
});

describe('an epoch-capped grid survives being killed', { timeout: 600_000 }, () => {
  let first: Report;

  test('killed after the first validated epoch, rerun: every run trains exactly the cap', async () => {
    const learned = join(out, 'src-tgt-learned');
    // Killed once the first epoch is checkpointed: somewhere in the second (or between its line and its save).
    const killed = await experiment(
      async () => ((await readCheckpointInfo(learned, 'last').catch(() => null))?.epoch ?? 0) >= 1,
    );
    assert.equal(killed.code, null, `the grid ended before it was killed:\n${killed.stderr}`);
    assert.ok(!existsSync(join(out, 'report', 'report.json')), 'no report from an interrupted grid');
    const before = (await readMetrics(learned)).slice(0, 1);
    assert.equal(before[0]?.epoch, 1);

    const rerun = await experiment();
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.match(rerun.stderr, /src-tgt-learned: resuming at/);
    for (const head of HEADS) {
      const dir = join(out, `src-tgt-${head}`);
      const last = await readCheckpointInfo(dir, 'last');
      assert.equal(last?.epoch, EPOCHS, head);
      assert.equal(last?.state.stopReason, `reached ${EPOCHS} epochs`);
      const metrics = await readMetrics(dir);
      // Each epoch validated once: the resumed run went on from its checkpoint, not from the start.
      assert.deepEqual(
        metrics.filter((m) => m.complete).map((m) => m.epoch),
        Array.from({ length: EPOCHS }, (_, i) => i + 1),
        head,
      );
    }
    const resumed = await readMetrics(learned);
    assert.deepEqual(resumed.slice(0, before.length), before, 'the epochs before the kill are kept as they were');
    first = await readReport();
    assert.match(first.title, new RegExp(`at most ${EPOCHS} epochs per run`));
    for (const r of first.runs) {
      assert.equal(r.training.epochs, EPOCHS);
      assert.equal(r.training.budgetMinutes, null);
      assert.equal(r.training.budgetEpochs, EPOCHS);
      // The learning curve is the run's metrics.jsonl, one validation per epoch, resumed or not.
      const validated = (await readMetrics(r.runDir)).filter((m) => m.complete);
      assert.deepEqual(
        r.training.valBleuCurve,
        validated.map((m) => ({ epoch: m.epoch, step: m.step, bleu: m.valBleu })),
        r.id,
      );
      // Three epochs are too few to measure the last five's gain: the verdicts cannot call these runs converged.
      assert.equal(r.training.lastGain, null);
    }
  });

  test('a third run trains nothing and writes the same report', async () => {
    const metrics = await Promise.all(HEADS.map((h) => readFile(join(out, `src-tgt-${h}`, 'metrics.jsonl'), 'utf8')));
    const again = await experiment();
    assert.equal(again.code, 0, again.stderr);
    assert.equal((again.stderr.match(/finished \(reached 3 epochs\), reused/g) ?? []).length, HEADS.length);
    assert.doesNotMatch(again.stderr, /^training /m, 'nothing trains');
    assert.deepEqual(
      await Promise.all(HEADS.map((h) => readFile(join(out, `src-tgt-${h}`, 'metrics.jsonl'), 'utf8'))),
      metrics,
    );
    const second = await readReport();
    assert.deepEqual(second.runs, first.runs);
  });

  // runs/ is not in git: a grid that spans sessions commits its report, and a fresh clone has only that.
  test('on a fresh clone, a run the committed report keeps is reused from its row, not trained again', async () => {
    const learned = join(out, 'src-tgt-learned');
    await rm(learned, { recursive: true });
    await rm(join(out, 'artifacts', 'src-tgt-learned'), { recursive: true, force: true });
    const again = await experiment();
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /src-tgt-learned: no run folder; finished in \S+report\.json \(3 epochs, test BLEU/);
    assert.doesNotMatch(again.stderr, /^training /m, 'nothing trains');
    assert.ok(!existsSync(learned), 'the reused run is not trained again');
    assert.deepEqual((await readReport()).runs, first.runs);
  });

  test('--report-only reports the runs finished so far and trains nothing', async () => {
    const only = await experiment(undefined, [...HEADS, 'tied'], ['--report-only']);
    assert.equal(only.code, 0, only.stderr);
    assert.ok(!existsSync(join(out, 'src-tgt-tied')), 'a run not started stays so');
    const partial = await readReport();
    assert.match(partial.title, /; 2 of 3 runs finished so far/);
    assert.deepEqual(partial.runs, first.runs);
  });

  test("a folder started with other --train-flags is refused, not resumed under the grid's", async () => {
    const fixed = join(out, 'src-tgt-fixed-l2');
    const config = JSON.parse(await readFile(join(fixed, 'config.json'), 'utf8')) as { argv?: string[] };
    // The grid's own arguments, then the budget trainSideBySide gives every run.
    assert.deepEqual(config.argv?.slice(0, 4), ['--arch', 'rnn-attn', '--head', 'fixed-l2']);
    assert.deepEqual(config.argv?.slice(-3), ['--epochs', String(EPOCHS), '--quiet']);
    const metrics = await readFile(join(fixed, 'metrics.jsonl'), 'utf8');
    const other = await experiment(undefined, HEADS, ['--train-flags', '--lr 0.01']);
    assert.equal(other.code, 1, other.stderr);
    assert.match(
      other.stderr,
      /src-tgt-fixed-l2 was started with `frost train --arch rnn-attn --head fixed-l2 .*`; this grid starts it with `frost train .* --lr 0\.01`/,
    );
    assert.doesNotMatch(other.stderr, /^training /m, 'nothing trains');
    assert.ok(!existsSync(join(out, 'src-tgt-learned')), 'nothing started');
    assert.equal(await readFile(join(fixed, 'metrics.jsonl'), 'utf8'), metrics);
  });

  test("a report row stands for a run only when it is that run, under the grid's budget, finished", async () => {
    const { rows } = await readReportedRuns(join(out, 'report'));
    const row = rows.get('src-tgt-learned')!;
    const want = {
      ...{ arch: 'rnn-attn', preset: 'tiny', head: 'learned', seed: 1, src: 'src', tgt: 'tgt', beam: 2 },
      trainFlags: [],
    };
    assert.deepEqual(row.training.trainFlags, []);
    assert.equal(rowMismatch(row, want, { epochs: EPOCHS }), null);
    assert.match(rowMismatch(row, { ...want, seed: 2 }, { epochs: EPOCHS }) ?? '', /seed=1; this grid wants seed=2/);
    assert.match(rowMismatch(row, want, { epochs: 20 }) ?? '', /epochs=3; this grid wants epochs=20/);
    assert.match(rowMismatch(row, { ...want, beam: 5 }, { epochs: EPOCHS }) ?? '', /beam=2; this grid wants beam=5/);
    assert.match(rowMismatch(row, want, {}) ?? '', /epochs=3; this grid wants epochs=none/);
    const flags = { ...want, trainFlags: ['--lr', '0.01'] };
    assert.match(
      rowMismatch(row, flags, { epochs: EPOCHS }) ?? '',
      /trainFlags=; this grid wants trainFlags=--lr 0.01/,
    );
    const { trainFlags: _flags, ...older } = row.training;
    assert.match(rowMismatch({ ...row, training: older }, want, { epochs: EPOCHS }) ?? '', /trainFlags=unrecorded/);
    const unrecorded = { ...row, training: { ...row.training, stopKind: null } };
    assert.match(rowMismatch(unrecorded, want, { epochs: EPOCHS }) ?? '', /did not record that it finished/);
    // A torn report would be overwritten and its runs trained again: refused, naming the file.
    const torn = join(out, 'torn');
    await rm(torn, { recursive: true, force: true });
    await mkdir(torn);
    await writeFile(join(torn, 'report.json'), '{"format": "frost-report", "runs": [');
    await assert.rejects(readReportedRuns(torn), /torn\/report\.json is not JSON .*move it away/);
  });
});
