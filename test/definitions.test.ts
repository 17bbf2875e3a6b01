import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { z } from 'zod';
import { parseOptions } from '../core/options.ts';
import { Registry } from '../core/registry.ts';
import {
  buildModel,
  getHeadDefinition,
  headNames,
  readTargetMatrix,
  resolveArchConfig,
  resolveHeadOptions,
} from '../models/index.ts';
import { initBackend } from '../train/backend/select.ts';

const sizes = { srcVocab: 40, tgtVocab: 30 };
const config = resolveArchConfig('rnn-attn', 'tiny');

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
});

describe('Registry', () => {
  test('a second registration under a name throws; an unknown name lists the known ones', () => {
    const r = new Registry<number>('widget');
    r.register('a', 1);
    r.register('b', 2);
    assert.throws(() => r.register('a', 3), /widget 'a' is already registered/);
    assert.equal(r.get('a'), 1);
    assert.throws(
      () => r.get('c'),
      (err: Error) => err instanceof RangeError && err.message === "unknown widget 'c'; known: a, b",
    );
    assert.equal(r.find('c'), undefined);
    assert.deepEqual(r.names(), ['a', 'b']);
  });
});

describe('options schemas', () => {
  const schema = z.strictObject({ limit: z.number().positive().default(10), layers: z.number().int().default(2) });

  test('defaults are filled in and the given values kept', () => {
    assert.deepEqual(parseOptions(schema, { layers: 3 }, 'x'), { limit: 10, layers: 3 });
  });

  test('an unknown key is refused in one line naming the allowed keys', () => {
    assert.throws(() => parseOptions(schema, { limt: 5 }, "head 'h'"), {
      message: "head 'h': unknown option 'limt' (options: limit, layers)",
    });
    assert.throws(() => parseOptions(z.strictObject({}), { a: 1 }, "head 'h'"), {
      message: "head 'h': unknown option 'a' (it takes no options)",
    });
  });

  test('a wrong type or range is refused naming the expected type and the value given', () => {
    assert.throws(() => parseOptions(schema, { limit: 'abc' }, "head 'h'"), {
      message: `head 'h': option 'limit' expects a number, got "abc"`,
    });
    assert.throws(() => parseOptions(schema, { layers: 1.5 }, "head 'h'"), {
      message: "head 'h': option 'layers' expects an integer, got 1.5",
    });
    assert.throws(() => parseOptions(schema, { limit: -1 }, "head 'h'"), {
      message: "head 'h': option 'limit' must be > 0, got -1",
    });
  });
});

describe('output head definitions', () => {
  test('every head refuses an option it does not have, naming its options', () => {
    for (const name of headNames()) {
      const allowed = Object.keys(getHeadDefinition(name).options.shape);
      const known = allowed.length > 0 ? `options: ${allowed.join(', ')}` : 'it takes no options';
      assert.throws(
        () => resolveHeadOptions(name, { limt: 5 }),
        { message: `head '${name}': unknown option 'limt' (${known})` },
        name,
      );
    }
  });

  test('a model is not built with a mistyped or wrongly typed head option', () => {
    assert.throws(
      () => buildModel('rnn-attn', config, sizes, { name: 'fixed-uniform', options: { limt: 5 } }, 1),
      /unknown option 'limt' \(options: limit\)/,
    );
    assert.throws(
      () => buildModel('rnn-attn', config, sizes, { name: 'drill', options: { layers: 'two' } }, 1),
      /option 'layers' expects a number/,
    );
    assert.deepEqual(resolveHeadOptions('fixed-uniform', {}), { limit: 10 });
  });

  test('a head is frozen exactly when its built parameters hold a frozen matrix; its target matrix is read as the definition says', () => {
    for (const name of headNames()) {
      const def = getHeadDefinition(name);
      const model = buildModel('rnn-attn', config, sizes, { name }, 1);
      try {
        const frozenHead = [...model.params.frozen.keys()].some((k) => k.startsWith('head/'));
        assert.equal(def.frozen, frozenHead, `${name}: frozen flag`);
        const m = readTargetMatrix(name, model.params);
        if (def.targetMatrix === undefined) {
          assert.equal(m, null, name);
          continue;
        }
        assert.ok(m, name);
        assert.equal(m.kind, def.frozen ? 'frozen' : 'learned', name);
        assert.equal(m.rows, sizes.tgtVocab, `${name}: one row per target word`);
        assert.equal(m.data.length, m.rows * m.dim, name);
      } finally {
        model.params.dispose();
      }
    }
  });

  test("the learned head's target vectors are the columns of W", () => {
    const model = buildModel('rnn-attn', config, sizes, { name: 'learned' }, 1);
    try {
      const W = model.params.get('head/W');
      const [d, V] = W.shape as [number, number];
      const w = W.dataSync();
      const m = readTargetMatrix('learned', model.params)!;
      assert.equal(m.dim, d);
      for (const [j, i] of [
        [0, 0],
        [V - 1, d - 1],
        [7, 3],
      ] as const)
        assert.equal(m.data[j * d + i], w[i * V + j]);
    } finally {
      model.params.dispose();
    }
  });
});

describe('architecture settings (--set)', () => {
  test('an unknown setting names the settings; a wrong type names the expected one', () => {
    assert.throws(() => resolveArchConfig('rnn-attn', 'tiny', { hiden: 3 }), {
      message:
        "architecture 'rnn-attn': unknown setting 'hiden' (settings: embedding, hidden, encoderHidden, attention, output, dropout)",
    });
    assert.throws(() => resolveArchConfig('rnn-attn', 'tiny', { hidden: 'abc' }), {
      message: `architecture 'rnn-attn': setting 'hidden' expects a number, got "abc"`,
    });
    assert.throws(
      () => resolveArchConfig('show-tell', 'tiny', { cnnChannels: [8, 'x'] }),
      /setting 'cnnChannels.1' expects a number/,
    );
    assert.equal(resolveArchConfig('rnn-attn', 'tiny', { hidden: 100 }).hidden, 100);
  });
});
