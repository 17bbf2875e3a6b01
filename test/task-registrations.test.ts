/**
 * Each training task's sides are registrations made in its own files, found through the task: its export
 * (export/task-exports.ts), its report (report/tasks/) and `frost train`'s new-run flags
 * (clients/cli/commands/train-tasks/). Every registered training task has all three; `frost report` picks the report
 * through them and refuses runs of two reports in one line, whatever order the runs come in. No training.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { newRunTask, tasksWith } from '../clients/cli/commands/train-tasks/index.ts';
import { taskExport } from '../export/task-exports.ts';
import { chooseReport, refuseMixedRuns } from '../report/choose-report.ts';
import { taskReport } from '../report/tasks/index.ts';
import type { TaskName } from '../train/run-config.ts';
import { taskNames } from '../train/tasks/index.ts';
import { toyRunConfig } from './helpers/toy-run.ts';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

test('every training task registers its export, its report and its new-run flags', () => {
  assert.deepEqual(taskNames(), ['translation', 'caption', 'lm']);
  for (const task of taskNames() as TaskName[]) {
    assert.equal(typeof taskExport(task).build, 'function', `${task}: export`);
    assert.equal(taskReport(task).task, task, `${task}: report`);
    assert.equal(newRunTask(task).task, task, `${task}: new-run flags`);
  }
});

test('an unregistered task is refused by each registry, naming the registered ones', () => {
  const task = 'speech' as TaskName;
  assert.throws(() => taskExport(task), /^RangeError: unknown task export 'speech'; known: translation, caption, lm$/);
  assert.throws(() => taskReport(task), /^RangeError: unknown task report 'speech'; known: translation, caption, lm$/);
  assert.throws(() => newRunTask(task), /^RangeError: unknown new-run task 'speech'; known: translation, caption, lm$/);
});

test('translation and captioning share the BLEU report, language models have the perplexity report', () => {
  assert.equal(taskReport('translation').report, taskReport('caption').report);
  assert.equal(taskReport('translation').report.name, 'bleu');
  assert.equal(taskReport('lm').report.name, 'perplexity');
});

test('the refusal of mixed runs names one report and the other runs, whatever order they come in', () => {
  const [translation, caption, lm] = [taskReport('translation'), taskReport('caption'), taskReport('lm')];
  const message =
    /^Error: cannot report language-model runs \(l\) together with other runs \(t\): run `frost report` once for each kind$/;
  assert.throws(() => refuseMixedRuns(['t', 'l'], [translation, lm]), message);
  assert.throws(() => refuseMixedRuns(['l', 't'], [lm, translation]), message);
  assert.throws(
    () => refuseMixedRuns(['t', 'l', 'c'], [translation, lm, caption]),
    /^Error: cannot report language-model runs \(l\) together with other runs \(t, c\)/,
  );
  // Runs of one report mix freely, whichever tasks they are.
  refuseMixedRuns(['t', 'c'], [translation, caption]);
  refuseMixedRuns([], []);
});

test("frost report finds the report through the runs' tasks (config.json), and refuses an empty list", async () => {
  const dir = await mkdtemp(join(tmpdir(), 'frost-task-registrations-'));
  dirs.push(dir);
  const mt = join(dir, 'mt');
  await mkdir(mt);
  await writeFile(join(mt, 'config.json'), JSON.stringify(toyRunConfig(join(dir, 'toy'), 'learned')));
  assert.equal((await chooseReport([mt])).name, 'bleu');
  await assert.rejects(() => chooseReport([]), /^Error: a report needs at least one run folder$/);
});

test('the flags of a capability name the tasks that declare it', () => {
  assert.equal(tasksWith('jointVocabulary'), '--task translation');
  assert.equal(tasksWith('compactOutput'), '--task translation');
  assert.equal(newRunTask('lm').defaultData, true);
  assert.equal(newRunTask('caption').jointVocabulary, undefined);
});
