/**
 * `frost experiment --help` names what the registries hold: every registered translation architecture among
 * mt-heads' `--arch` choices and every captioning one among caption-heads', so a new architecture needs no edit to
 * the command; and an experiment refuses an architecture of another task before any data is read.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Command } from 'commander';
import { registerExperiment } from '../clients/cli/commands/experiment.ts';
import { archChoices, getExperiment } from '../experiments/index.ts';
import { archNames, getArch } from '../models/index.ts';

function experimentHelp(): string {
  const program = new Command('frost');
  registerExperiment(program);
  const help = program.commands.find((c) => c.name() === 'experiment')!.helpInformation();
  // commander wraps long descriptions to the terminal width: read the help as one line.
  return help.replace(/\s+/g, ' ');
}

test('every registered translation architecture is a choice of frost experiment mt-heads --arch, in its help', () => {
  const translation = archNames({ family: 'seq2seq' }).filter((a) => getArch(a).inputKind === 'tokens');
  assert.ok(translation.includes('rnn-attn') && translation.includes('convs2s') && translation.includes('transformer'));
  assert.deepEqual(archChoices(getExperiment('mt-heads')), translation);
  const help = experimentHelp();
  const mtHeads = /mt-heads: rnn-attn \(one of ([^)]*)\)/.exec(help);
  assert.ok(mtHeads, help);
  assert.deepEqual(mtHeads[1]!.split(', '), translation);
});

test('every registered captioning architecture is a choice of caption-heads, in its help', () => {
  const captioning = archNames({ family: 'seq2seq' }).filter((a) => getArch(a).inputKind === 'image');
  assert.deepEqual(archChoices(getExperiment('caption-heads')), captioning);
  const captionHeads = /caption-heads: show-tell,show-attend-tell \(a list of ([^)]*)\)/.exec(experimentHelp());
  assert.ok(captionHeads);
  assert.deepEqual(captionHeads[1]!.split(', '), captioning);
});

test('the help names each experiment with its data and beam', () => {
  const help = experimentHelp();
  assert.match(help, /'multi30k' \(mt-heads\), 'flickr8k' \(caption-heads\), 'toy'/);
  assert.match(help, /mt-heads 5, caption-heads 10\)/);
});

test('an experiment refuses an architecture of another task, naming its own, before any data is read', async () => {
  const out = '/nonexistent/frost-experiment-help';
  await assert.rejects(
    getExperiment('mt-heads').run({ data: 'toy', budgetMinutes: 1, arch: 'show-tell', out, log: () => {} }),
    { message: /'show-tell' is not a translation architecture; mt-heads trains .*rnn-attn/ },
  );
  await assert.rejects(
    getExperiment('caption-heads').run({ data: 'toy', budgetMinutes: 1, arch: 'rnn-attn', out, log: () => {} }),
    { message: /'rnn-attn' is not a captioning architecture; caption-heads trains .*show-tell/ },
  );
});
