/**
 * Which architectures take the Hugging Face layout is what they declare (`selfAttentionCaches`,
 * models/archs/types.ts), not a name export/hf/ knows: one that does not declare it is refused in one line naming
 * those that do, read from the registry, so an architecture registered later joins the list with no edit in export/.
 * No training: the refusal reads the run's task and architecture only.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import { hfRunRefusal } from '../export/hf/hf-layout.ts';
import { archNames, getArch } from '../models/index.ts';
import { registerArch } from '../models/archs/registry.ts';

const REFUSAL =
  /^--hf: architecture '([\w-]+)' cannot take it \(the Hugging Face layout feeds the decoder key\/value caches that grow one position a step, which only architectures declaring selfAttentionCaches have: (.+)\)$/;

test('the Transformer declares selfAttentionCaches and takes the layout', () => {
  assert.equal(getArch('transformer').selfAttentionCaches, true);
  assert.equal(hfRunRefusal({ task: 'translation', arch: 'transformer' }), undefined);
});

test('every translation architecture that does not declare it is refused, naming those that do', () => {
  const refused = archNames({ task: 'translation' }).filter((name) => getArch(name).selfAttentionCaches !== true);
  assert.ok(refused.includes('rnn-attn') && refused.includes('convs2s') && refused.includes('lightconv'), `${refused}`);
  for (const arch of refused) {
    const match = REFUSAL.exec(hfRunRefusal({ task: 'translation', arch }) ?? '');
    assert.ok(match, `${arch}: ${hfRunRefusal({ task: 'translation', arch })}`);
    assert.equal(match[1], arch);
    assert.equal(match[2], 'transformer');
  }
});

test("a run's tokeniser without a tokenizer.json writer is refused before exporting", () => {
  for (const tokenizer of ['sentencepiece', 'marian'])
    assert.equal(hfRunRefusal({ task: 'translation', arch: 'transformer', tokenizer }), undefined, tokenizer);
  for (const tokenizer of ['fairseq', 'multi30k'])
    assert.match(
      hfRunRefusal({ task: 'translation', arch: 'transformer', tokenizer })!,
      new RegExp(`^--hf: tokenizer '${tokenizer}' cannot be written as tokenizer.json`),
    );
});

test('an architecture the registry does not know is refused the same way', () => {
  assert.match(hfRunRefusal({ task: 'translation', arch: 'no-such-arch' })!, REFUSAL);
});

test('the task is checked first: a caption model is refused as such, whatever its architecture', () => {
  assert.match(
    hfRunRefusal({ task: 'caption', arch: 'show-tell' })!,
    /^--hf: a caption model \(the Hugging Face layout is for translation models\)$/,
  );
});

test('an architecture registered later that declares it takes the layout and joins the refusal list', () => {
  const settings = z.strictObject({});
  registerArch<Record<string, never>>({
    name: 'test-cached-decoder',
    summary: 'a stand-in that declares selfAttentionCaches (never built)',
    selfAttentionCaches: true,
    tasks: ['translation'],
    inputKind: 'tokens',
    presets: { tiny: {} },
    settings,
    build: () => {
      throw new Error('not built in this test');
    },
  });
  assert.equal(hfRunRefusal({ task: 'translation', arch: 'test-cached-decoder' }), undefined);
  const match = REFUSAL.exec(hfRunRefusal({ task: 'translation', arch: 'rnn-attn' }) ?? '');
  assert.equal(match?.[2], 'transformer, test-cached-decoder');
});
