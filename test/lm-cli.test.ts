/**
 * The language-model user flow through the CLI: `frost train --task lm`, `frost eval` (perplexity
 * by frequency bin, per head) and `frost export`, and the flags that belong to other tasks refused.
 * The commands run in this process, as the CLI registers them (helpers/frost-in-process.ts); one
 * refusal runs bin/frost.js in a child, for the exit status and stderr the shell sees.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { FROST_BIN } from './helpers/frost-cli.ts';
import { frostInProcess as frost } from './helpers/frost-in-process.ts';
import { writeMarkovCorpus } from './helpers/lm-run.ts';

let dir: string;
let dataDir: string;

/** bin/frost.js in a child process. */
function frostChild(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [FROST_BIN, ...args], { timeout: 120_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'frost-lm-cli-'));
  ({ dataDir } = await writeMarkovCorpus(dir, { train: 5000, valid: 800, test: 800 }));
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('train --task lm, eval two heads side by side, export', async () => {
  const common = ['--task', 'lm', '--preset', 'tiny', '--data', dataDir, '--epochs', '1', '--bptt', '10', '--quiet'];
  const runs = { learned: join(dir, 'lm-learned'), drill: join(dir, 'lm-drill') };
  // One at a time: each captures this process's output while it runs.
  const trained = [
    await frost(['train', ...common, '--head', 'learned', '--out', runs.learned]),
    await frost([
      'train',
      ...common,
      '--head',
      'drill',
      '--head-option',
      'layers=1',
      '--head-option',
      'dropout=0.2',
      '--out',
      runs.drill,
    ]),
  ];
  for (const t of trained) assert.equal(t.code, 0, t.stderr);
  const config = JSON.parse(await readFile(join(runs.drill, 'config.json'), 'utf8')) as Record<string, unknown>;
  assert.deepEqual(config.head, { name: 'drill', options: { layers: 1, dropout: 0.2 } });
  assert.deepEqual(config.batch, { streams: 20, bptt: 10 });

  const evaluated = await frost(['eval', runs.learned, runs.drill]);
  assert.equal(evaluated.code, 0, evaluated.stderr);
  const lines = evaluated.stdout.split('\n');
  assert.match(lines[0], /^run\s+head\s+valid ppl\s+test ppl\s+bin 1\s+bin 2\s+bin 3\s+bin 4\s+bin 5$/);
  assert.match(lines[1], /lm-learned\s+learned\s+\d+\.\d\d\s+\d+\.\d\d/);
  assert.match(lines[2], /lm-drill\s+drill\s+\d+\.\d\d\s+\d+\.\d\d/);
  const saved = JSON.parse(await readFile(join(runs.drill, 'eval.json'), 'utf8')) as { test: { bins: unknown[] } };
  assert.equal(saved.test.bins.length, 5);

  const exported = await frost(['export', runs.drill, '--out', join(dir, 'artifacts', 'lm-drill'), '--quiet']);
  assert.equal(exported.code, 0, exported.stderr);
  const card = JSON.parse(await readFile(join(dir, 'artifacts', 'lm-drill', 'model-card.json'), 'utf8')) as {
    task: string;
    head: unknown;
  };
  assert.equal(card.task, 'lm');
  assert.deepEqual(card.head, { name: 'drill', layers: 1, dropout: 0.2 });
});

test('flags of other tasks are refused, naming the flag', async () => {
  const lm = await frostChild(['train', '--task', 'lm', '--src', 'en', '--data', dataDir, '--out', join(dir, 'x')]);
  assert.notEqual(lm.code, 0);
  assert.match(lm.stderr, /--src is not for --task lm/);
  const mt = await frost(['train', '--bptt', '5', '--data', dataDir, '--out', join(dir, 'y')]);
  assert.match(mt.stderr, /--bptt is for --task lm/);
  const arch = await frost(['train', '--task', 'lm', '--arch', 'rnn-attn', '--data', dataDir, '--out', join(dir, 'z')]);
  assert.match(arch.stderr, /unknown language-model architecture 'rnn-attn'; known: lstm-lm/);
  const fp16 = await frost(['export', join(dir, 'lm-drill'), '--out', join(dir, 'fp16'), '--precision', 'fp16']);
  assert.match(fp16.stderr, /--precision fp16: language models export in fp32 only for now/);
  // frost report takes lm runs now (test/lm-report.test.ts checks its numbers); a bad --bins is refused.
  const bins = await frost(['report', join(dir, 'lm-drill'), '--out', join(dir, 'report'), '--bins', '0', '--quiet']);
  assert.match(bins.stderr, /--bins must be an integer in 1\.\.100, got '0'/);
  const report = await frost(['report', join(dir, 'lm-drill'), '--out', join(dir, 'report'), '--quiet']);
  assert.equal(report.code, 0, report.stderr);
  assert.match(await readFile(join(dir, 'report', 'report.md'), 'utf8'), /^\| lm-drill \| drill \| /m);
  const notLm = await frost(['eval', dir]);
  assert.match(notLm.stderr, /is not a frost run folder/);
});
