import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { newRunConfigFromArguments } from '../clients/cli/commands/train.ts';
import { demoModelName, demoRecipes, demoTrainArguments, parseDemoRecipes } from '../clients/cli/demo-recipe.ts';
import { multi30kFileName } from '../train/data/multi30k.ts';

describe('demo recipes (clients/cli/demo-recipes.json)', () => {
  let dataDir: string;
  before(async () => {
    // A folder that looks like Multi30k to detectCorpusKind; a config reads no sentences.
    dataDir = await mkdtemp(join(tmpdir(), 'frost-demo-recipe-'));
    await writeFile(join(dataDir, multi30kFileName('train', 'en')), '');
  });
  after(() => rm(dataDir, { recursive: true, force: true }));

  const training = () => ({ dataDir, src: 'de', tgt: 'en', minutes: 20 });
  const flagValue = (args: readonly string[], flag: string) => args[args.lastIndexOf(flag) + 1];

  it('every shipped recipe is a valid `frost train` run of its architecture, head and budget', async () => {
    const { recipes } = demoRecipes();
    assert.ok(Object.keys(recipes).length >= 2);
    for (const [name, recipe] of Object.entries(recipes)) {
      const args = demoTrainArguments(recipe, training());
      const config = await newRunConfigFromArguments(args, join(dataDir, 'run'));
      assert.equal(config.task, 'translation', name);
      assert.equal(config.arch, flagValue(recipe.train, '--arch'), name);
      assert.equal(config.head.name, flagValue(recipe.train, '--head'), name);
      assert.equal(config.maxMinutes, 20, name);
      assert.deepEqual(config.argv, args, name);
      if (config.task !== 'translation') continue;
      assert.deepEqual([config.data.src, config.data.tgt, config.data.kind], ['de', 'en', 'multi30k'], name);
      assert.equal(config.vocab.kind, flagValue(recipe.train, '--vocab'), name);
    }
  });

  it("carries each recipe's own settings into the run (the short recipe's rate, dropout, smoothing, EMA)", async () => {
    const recipe = demoRecipes().recipes['rnn-attn-short']!;
    const config = await newRunConfigFromArguments(demoTrainArguments(recipe, training()), join(dataDir, 'run'));
    assert.equal(config.optim.learningRate, 0.002);
    assert.equal(config.archConfig.dropout, 0);
    assert.equal(config.labelSmoothing, 0.1);
    assert.equal(config.emaDecay, 0.999);
    const paper = demoRecipes().recipes['rnn-attn-paper']!;
    const paperConfig = await newRunConfigFromArguments(demoTrainArguments(paper, training()), join(dataDir, 'run'));
    assert.notEqual(paperConfig.archConfig.dropout, 0);
    assert.equal(paperConfig.labelSmoothing, 0);
  });

  it("--head replaces the recipe's head and names the model", async () => {
    const recipe = demoRecipes().recipes['transformer-tied']!;
    const args = demoTrainArguments(recipe, { ...training(), head: 'shared-l2' });
    assert.equal((await newRunConfigFromArguments(args, join(dataDir, 'run'))).head.name, 'shared-l2');
    assert.equal(
      demoModelName('transformer-tied', { src: 'de', tgt: 'en', head: 'shared-l2' }),
      'demo-de-en-transformer-tied-shared-l2',
    );
    assert.equal(demoModelName('rnn-attn-short', { src: 'de', tgt: 'en' }), 'demo-de-en-rnn-attn-short');
  });

  it('refuses a recipe that sets what the demo gives, or a default that is not a recipe', () => {
    const recipe = { description: 'x', train: ['--arch', 'rnn-attn'] };
    assert.throws(
      () => parseDemoRecipes({ default: 'a', recipes: { a: { ...recipe, train: ['--data', '/etc'] } } }, 'r.json'),
      /r\.json: recipes\.a\.train: a recipe may not set --data/,
    );
    assert.throws(
      () => parseDemoRecipes({ default: 'a', recipes: { a: { ...recipe, train: ['--max-minutes=600'] } } }, 'r.json'),
      /may not set/,
    );
    assert.throws(() => parseDemoRecipes({ default: 'b', recipes: { a: recipe } }, 'r.json'), /default must name/);
    assert.throws(
      () => parseDemoRecipes({ default: 'a', recipes: { a: { ...recipe, precision: 'int4' } } }, 'r.json'),
      /recipes\.a\.precision/,
    );
    const parsed = parseDemoRecipes({ default: 'a', recipes: { a: recipe } }, 'r.json');
    assert.equal(parsed.default, 'a');
    assert.equal(parsed.recipes.a!.precision, 'fp32', 'a recipe without a precision exports float32');
  });

  it('refuses unknown or misplaced `frost train` arguments with the argument named', async () => {
    const run = join(dataDir, 'run');
    await assert.rejects(
      newRunConfigFromArguments(['--arch', 'rnn-attn', '--no-such-flag', '--data', dataDir], run),
      /unknown option '--no-such-flag'/,
    );
    await assert.rejects(
      newRunConfigFromArguments(['--arch', 'nope', '--data', dataDir], run),
      /--arch <name>' argument 'nope' is invalid/,
    );
    await assert.rejects(
      newRunConfigFromArguments(['--arch', 'rnn-attn', '--data', dataDir, '--out', run], run),
      /--out and --resume are the caller's/,
    );
    await assert.rejects(
      newRunConfigFromArguments(['--joint-vocab', '--data', dataDir], run),
      /--joint-vocab needs --vocab/,
    );
  });
});
