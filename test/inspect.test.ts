import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { exportRun } from '../export/export-run.ts';
import { formatInspect, inspectModel, type InspectReport } from '../export/inspect.ts';
import { formatBytes, formatCount, formatTable } from '../export/inspect-table.ts';
import { componentOf, scopeOf, sizeReport } from '../export/size-report.ts';
import { initBackend } from '../train/backend/select.ts';
import { buildTinyModel, writeTinyModelDir } from './helpers/tiny-model.ts';
import { trainToyRun } from './helpers/toy-run.ts';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..');
let dir: string;
let modelDir: string;

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  dir = await mkdtemp(join(tmpdir(), 'frost-inspect-'));
  // A one-epoch run on a small corpus: inspect needs a real export, not a good model.
  const { runDir } = await trainToyRun(dir, {
    corpus: { seed: 2, train: 300, val: 20, test: 20 },
    config: { epochs: 1, optim: { learningRate: 1e-3 } },
  });
  modelDir = join(dir, 'model');
  await exportRun(runDir, modelDir, { precision: 'int8', quiet: true });
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/**
 * Runs `frost inspect ...args` in a child process, through the command's own registration (the
 * lead wires it into the CLI's command list): stdout is the test runner's channel in this process.
 */
async function runInspect(...args: string[]): Promise<string> {
  const script = [
    "import { Command } from 'commander';",
    "import { registerInspect } from './clients/cli/commands/inspect.ts';",
    "const program = new Command('frost');",
    'registerInspect(program);',
    'await program.parseAsync(process.argv.slice(2), { from: "user" });',
  ].join('\n');
  // A leading 'frost': a bare `inspect` right after the script would start node's debugger.
  const argv = ['--import', 'tsx', '--input-type=module', '-e', script, 'frost', 'inspect', ...args];
  const { stdout } = await run(process.execPath, argv, { cwd: ROOT, timeout: 60_000 });
  return stdout;
}

describe('size breakdown by name', () => {
  test('initializers map to components and scopes, tensors stored by the precision pass to their weight', () => {
    assert.equal(componentOf('encoder/embedding'), 'embeddings');
    assert.equal(componentOf('decoder/embedding.int8'), 'embeddings');
    assert.equal(componentOf('decoder/embedding.scale'), 'embeddings');
    assert.equal(componentOf('encoder/gru/W.fp16'), 'encoder');
    assert.equal(componentOf('decoder/attention/Ua'), 'decoder');
    assert.equal(componentOf('head/W'), 'head');
    assert.equal(componentOf('decoder/head/targets'), 'head');
    assert.equal(componentOf('head/const_3'), 'head');
    assert.equal(componentOf('const_0'), 'other');
    assert.equal(scopeOf('decoder/gru/R.int8'), 'decoder/gru');
    assert.equal(scopeOf('encoder/embedding'), 'encoder/embedding');
    assert.equal(scopeOf('head/W'), 'head');
    assert.equal(scopeOf('axes_2'), '(constants)');
  });

  test('sizeReport adds up every initializer byte of every file', () => {
    const tiny = buildTinyModel();
    const report = sizeReport({ 'encoder.onnx': tiny.encoder, 'decoder.onnx': tiny.decoder });
    const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
    assert.equal(sum(report.components), sum(report.scopes));
    assert.equal(sum(report.components), sum(report.dtypes));
    assert.equal(sum(report.components), sum(report.byFile['encoder.onnx']!) + sum(report.byFile['decoder.onnx']!));
    assert.equal(report.sessionCreateMs, undefined);
  });
});

describe('table formatting', () => {
  test('columns line up, numbers right-aligned, with a rule under the header', () => {
    assert.deepEqual(
      formatTable([
        ['a', 'bytes'],
        ['long name', '7'],
        ['b', '1,234'],
      ]),
      ['a          bytes', '---------  -----', 'long name      7', 'b          1,234'],
    );
    assert.equal(formatBytes(812), '812 B');
    assert.equal(formatBytes(42_291), '41.3 KiB');
    assert.equal(formatBytes(1_940_000), '1.85 MiB');
    assert.equal(formatCount(1234567), '1,234,567');
  });
});

describe('frost inspect', () => {
  test('prints parameters, files, bytes per component, session time, the int8 check and the graph interfaces', async () => {
    const text = await runInspect(modelDir);
    assert.match(text, /^model: rnn-attn tiny, head learned, weights stored as int8/);
    for (const component of ['embeddings', 'encoder', 'decoder', 'head'])
      assert.match(text, new RegExp(`^${component} +\\S`, 'm'));
    assert.match(text, /^encoder\.onnx +[\d,]+ .* ms$/m);
    assert.match(text, /^decoder\/gru +/m);
    assert.match(text, /^int8 +/m);
    assert.match(text, /precision check against fp32 \(greedy, onnxruntime, 20 validation sentences\)/);
    assert.match(text, /in +src_ids +int64 +\[batch, src_len\]/);
    assert.match(text, /out +log_probs +float32 +\[rows, \d+\]/);
  });

  test('--json prints the same report as data', async () => {
    const json = JSON.parse(await runInspect(modelDir, '--json')) as InspectReport;
    const report = await inspectModel(modelDir);
    assert.deepEqual(json, JSON.parse(JSON.stringify(report)));
    assert.equal(json.sizeSource, 'card');
    assert.ok(json.size.components.head! > 0);
    assert.ok(json.size.sessionCreateMs!['decoder.onnx']! > 0);
    assert.equal(json.precisionCheck!.precision, 'int8');
  });

  test('a card from before the size breakdown is inspected from its graph files', async () => {
    const tinyDir = await writeTinyModelDir(join(dir, 'tiny'));
    const report = await inspectModel(tinyDir);
    assert.equal(report.sizeSource, 'graphs');
    assert.ok(Object.values(report.size.components).some((b) => b > 0));
    const text = formatInspect(report);
    assert.match(text, /computed from the graph files/);
    assert.match(text, /session-creation time is measured at export/);
  });

  test('a missing model directory is reported with its path', async () => {
    await assert.rejects(inspectModel(join(dir, 'nope')), (err: Error) =>
      err.message.includes(join(dir, 'nope', 'model-card.json')),
    );
  });
});
