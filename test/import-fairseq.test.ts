/**
 * `frost import fairseq` (train/import/fairseq.ts, fairseq-lightconv.ts, docs/import.md): three tiny fairseq
 * transformers and two tiny fairseq lightconv models with random weights, built by python/frost_torch/transformer.py
 * and lightconv.py and saved as fairseq-train saves a checkpoint
 * (test/helpers/fairseq/tiny_fairseq.py), converted by frost_torch.convert_checkpoint (frost never unpickles),
 * imported, exported and translating 50 Multi30k sentences token for token as a PyTorch reference that reads the
 * converted folder itself (test/helpers/fairseq/fairseq_reference.py), greedy and beam 4:
 *
 * - post-norm, separate embeddings, fairseq's own output_projection.weight (no bias), relu;
 * - pre-norm, share_all_embeddings (one dictionary, the output layer is the embedding), gelu, layernorm_embedding,
 *   no_scale_embedding;
 * - frost's fixed-l2 head (frost_head, frost_head_seed), whose export stores no |V|×d matrix;
 * - `dynamicconv`: fairseq's lightconv arch with dynamic convolutions, post-norm, GLU, separate embeddings and output
 *   layer, kernels 3, 7 / 4, 9 (frost's dynamicconv); its int8-compute export stays within frost's BLEU tolerance;
 * - `lightconv`: lightweight convolutions, pre-norm, no GLU, share_all_embeddings, kernels 5, 3 / 3, 6.
 *
 * The reference decodes the lightconv models one step at a time with the convolutions' input buffers, as
 * fairseq-generate does. Hostile folders are refused with one line each and write nothing.
 */
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { corpusBleu } from '../core/metrics/bleu.ts';
import { decodeModel } from '../core/onnx/proto.ts';
import { loadModelDir } from '../core/runtime/load-node.ts';
import { parseModelCard } from '../core/runtime/model-card.ts';
import { importFairseq } from '../train/import/fairseq.ts';
import { multi30kDirOrNull } from './helpers/data-dir.ts';
import { frostInProcess } from './helpers/frost-in-process.ts';
import {
  assertImportRefused,
  assertProvenance,
  editTensors,
  flickrSentences,
  runTorchPython,
} from './helpers/import-checks.ts';
import { findTorchPython } from './helpers/torch-python.ts';

const HELPERS = join(import.meta.dirname, 'helpers', 'fairseq');
const PYTHON_DIR = join(import.meta.dirname, '..', 'python');
const SENTENCES = 50;
const PARITY = ['--parity-tolerance', '1e-3'];
const data = multi30kDirOrNull();

/** Each model, and how strongly its random weights lean towards `</s>` (so that outputs end at different lengths). */
const KINDS = { 'post-learned': 10.5, 'pre-shared': 20, 'frost-head': 9, dynamicconv: 6, lightconv: 6 } as const;
type Kind = keyof typeof KINDS;
const MODES = { greedy: 1, 'beam 4': 4 } as const;
/** frost's architecture for each (the CLI's summary line names it) and the provenance's format. */
const FROST_ARCH: Record<Kind, string> = {
  'post-learned': 'transformer',
  'pre-shared': 'transformer',
  'frost-head': 'transformer',
  dynamicconv: 'dynamicconv',
  lightconv: 'lightconv',
};
const FORMAT = (kind: Kind) => (FROST_ARCH[kind] === 'transformer' ? 'fairseq-transformer' : 'fairseq-lightconv');

interface Reference {
  source: number[];
  tokens: string[];
  log_prob: number;
}

let tmp: string;
let python: string;
let sentences: string[];
let references: string[];
const converted: Partial<Record<Kind, string>> = {};
const reference: Record<string, Reference[]> = {};

const runPython = (args: string[]) => runTorchPython(python, args, { PYTHONPATH: PYTHON_DIR });

before(() => {
  if (data === null) return;
  python = findTorchPython();
  tmp = mkdtempSync(join(tmpdir(), 'frost-import-fairseq-'));
  ({ sentences, references } = flickrSentences(data, SENTENCES));
  const file = join(tmp, 'sentences.de');
  writeFileSync(file, sentences.join('\n') + '\n');
  for (const [kind, boost] of Object.entries(KINDS) as [Kind, number][]) {
    const trained = join(tmp, `${kind}-fairseq`);
    const dir = join(tmp, kind);
    // Built and converted (frost_torch.convert_checkpoint's convert) in one process; its CLI: test/pytorch-ddp.test.ts.
    runPython([
      join(HELPERS, 'tiny_fairseq.py'),
      trained,
      data,
      '--kind',
      kind,
      '--eos-boost',
      String(boost),
      '--convert',
      dir,
    ]);
    converted[kind] = dir;
    // Every beam width in one reference process: torch starts once per model.
    const rows = runPython([
      join(HELPERS, 'fairseq_reference.py'),
      dir,
      file,
      '--beams',
      Object.values(MODES).join(','),
    ])
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Reference & { beam: number });
    for (const [mode, beam] of Object.entries(MODES))
      reference[`${kind}, ${mode}`] = rows.filter((r) => r.beam === beam);
  }
});

after(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** Float initializers of at least `values` values, by name and shape. */
function largeInitializers(bytes: Uint8Array, values: number): string[] {
  const graph = (
    decodeModel(bytes) as { graph: { initializer: { name: string; dims?: number[]; data_type?: number }[] } }
  ).graph;
  return graph.initializer
    .filter((t) => t.data_type === 1 && (t.dims ?? []).map(Number).reduce((a, b) => a * b, 1) >= values)
    .map((t) => `${t.name} [${(t.dims ?? []).join(', ')}]`);
}

for (const kind of Object.keys(KINDS) as Kind[]) {
  describe(`frost import fairseq: ${kind}`, { skip: data === null ? 'no Multi30k (FROST_DATA)' : false }, () => {
    let model: string;
    let run: string;

    before(async () => {
      if (data === null) return;
      run = join(tmp, `${kind}-run`);
      const imported = await frostInProcess(['import', 'fairseq', converted[kind]!, '--out', run, '--data', data]);
      assert.equal(imported.code, 0, imported.stderr);
      assert.match(imported.stdout, new RegExp(`imported de→en fairseq ${FROST_ARCH[kind]} `));
      model = join(tmp, `${kind}-model`);
      const exported = await frostInProcess(['export', run, '--out', model, '--quiet', ...PARITY]);
      assert.equal(exported.code, 0, exported.stderr);
    });

    for (const [mode, beam] of Object.entries(MODES)) {
      test(`${mode}: frost's translations of 50 Multi30k sentences equal the PyTorch reference's token for token`, async () => {
        const runtime = await loadModelDir(model, { intraOpNumThreads: 1 });
        try {
          const done = await runtime.translate(sentences, { beam, allowUnk: true });
          const want = reference[`${kind}, ${mode}`]!;
          assert.equal(want.length, SENTENCES);
          done.forEach((t, i) => {
            assert.deepEqual(t.tokens, want[i]!.tokens, `sentence ${i}: ${sentences[i]}`);
            const lp = want[i]!.log_prob;
            assert.ok(Math.abs(t.logProb - lp) < 1e-3 * Math.max(1, Math.abs(lp)), `sentence ${i}: ${t.logProb} ${lp}`);
          });
          assert.ok(new Set(done.map((t) => t.text)).size > 10, 'the outputs differ between sentences');
        } finally {
          await runtime.release();
        }
      });
    }

    test("the model card says where the weights came from: format, source folder, each file's SHA-256", () => {
      const card = parseModelCard(readFileSync(join(model, 'model-card.json'), 'utf8'), model);
      assert.equal(card.tokenizer, 'fairseq');
      assert.deepEqual(card.fairseq, { bpe: 'none', source: 'de' });
      assert.equal(card.arch, FROST_ARCH[kind]);
      const files = ['model.safetensors', 'fairseq.json', 'dict.de.txt', 'dict.en.txt'];
      assertProvenance(card.config.imported, FORMAT(kind), converted[kind]!, files);
    });

    if (kind === 'dynamicconv') {
      test("int8-compute: within frost's usual 3 BLEU of fp32 (validation and test2016), and close to fp32's outputs", async () => {
        const int8 = join(tmp, `${kind}-model-int8`);
        const r = await frostInProcess([
          'export',
          run,
          '--out',
          int8,
          '--quiet',
          '--precision',
          'int8-compute',
          ...PARITY,
        ]);
        assert.equal(r.code, 0, r.stderr);
        const card = parseModelCard(readFileSync(join(int8, 'model-card.json'), 'utf8'), int8);
        assert.equal(card.precision, 'int8-compute');
        assert.ok(card.precisionCheck!.bleuDelta! > -3, `validation BLEU Δ ${card.precisionCheck!.bleuDelta}`);
        const [fp32Runtime, q] = [
          await loadModelDir(model, { intraOpNumThreads: 1 }),
          await loadModelDir(int8, { intraOpNumThreads: 1 }),
        ];
        try {
          const [fp32, quantised] = [await fp32Runtime.translate(sentences), await q.translate(sentences)];
          const bleu = (ts: { text: string }[], refs: string[]) =>
            corpusBleu(
              ts.map((t) => t.text),
              [refs],
            ).score;
          // As for Marian (test/import-marian.test.ts): the bar is BLEU against the human references within 3 of
          // fp32's, which a random model meets at ≈ 0 either way; the outputs themselves must stay close to fp32's,
          // where a broken int8 graph scores near 0.
          const againstFp32 = bleu(
            quantised,
            fp32.map((t) => t.text),
          );
          assert.ok(againstFp32 >= 40, `int8-compute against fp32: BLEU ${againstFp32.toFixed(2)}`);
          assert.ok(bleu(quantised, references) >= bleu(fp32, references) - 3);
        } finally {
          await Promise.all([fp32Runtime.release(), q.release()]);
        }
      });
    }

    if (kind === 'frost-head') {
      test("the export stores no frozen matrix: the decoder's only |V|×d initializer is the input embedding", () => {
        const card = parseModelCard(readFileSync(join(model, 'model-card.json'), 'utf8'), model);
        const V = card.target.tokens.length;
        const d = (card.config.archConfig as { model: number }).model;
        assert.deepEqual(largeInitializers(readFileSync(join(model, 'decoder.onnx')), (V - 1) * d), [
          `decoder/embedding [${V}, ${d}]`,
        ]);
        assert.equal(card.head.name, 'fixed-l2');
        assert.ok((card.params.generated ?? 0) >= (V - 1) * d, `generated ${card.params.generated}`);
      });
    }
  });
}

/** The import of `dir` is refused with one line matching `pattern`, and writes nothing. */
const assertRefused = (dir: string, pattern: RegExp) =>
  assertImportRefused(
    (from, out) => importFairseq({ from, out }),
    dir,
    join(tmp, `run-${Math.random().toString(36).slice(2)}`),
    pattern,
  );

function copyOf(kind: Kind, name: string): string {
  const dir = join(tmp, name);
  cpSync(converted[kind]!, dir, { recursive: true });
  return dir;
}

describe(
  'frost import fairseq: hostile checkpoints are refused with one line each and write nothing',
  { skip: data === null ? 'no Multi30k (FROST_DATA)' : false },
  () => {
    test('fairseq.json whose encoder_embed_dim contradicts the tensors: the key and both shapes', async () => {
      const dir = copyOf('post-learned', 'bad-dim');
      const meta = JSON.parse(readFileSync(join(dir, 'fairseq.json'), 'utf8')) as { model: Record<string, unknown> };
      meta.model = { ...meta.model, encoder_embed_dim: 64, decoder_embed_dim: 64 };
      writeFileSync(join(dir, 'fairseq.json'), JSON.stringify(meta));
      await assertRefused(
        dir,
        /'encoder\.embed_tokens\.weight' is \[\d+, 32\], but fairseq\.json's dict\.de\.txt's \d+ words, encoder_embed_dim 64 imply \[\d+, 64\]/,
      );
    });

    test('a missing tensor: its key and the shape fairseq.json implies', async () => {
      const dir = copyOf('post-learned', 'missing-key');
      await editTensors(dir, (t) => delete t['decoder.layers.1.fc2.bias']);
      await assertRefused(
        dir,
        /no tensor 'decoder\.layers\.1\.fc2\.bias' \(fairseq\.json's encoder_embed_dim 32 imply \[32\]\)/,
      );
    });

    test('an extra tensor: its key and shape', async () => {
      const dir = copyOf('post-learned', 'extra-key');
      await editTensors(dir, (t) => {
        t['encoder.layers.0.adapter.weight'] = { shape: [4, 32], data: new Float32Array(128) };
      });
      await assertRefused(dir, /unexpected tensor 'encoder\.layers\.0\.adapter\.weight' \[4, 32\]/);
    });

    test('a tensor of the wrong shape: the key, its shape and the shape fairseq.json implies', async () => {
      const dir = copyOf('post-learned', 'wrong-shape');
      await editTensors(dir, (t) => {
        const w = t['encoder.layers.1.fc1.weight']!;
        t['encoder.layers.1.fc1.weight'] = { shape: [w.shape[1]!, w.shape[0]!], data: w.data };
      });
      await assertRefused(
        dir,
        /'encoder\.layers\.1\.fc1\.weight' is \[32, 64\], but fairseq\.json's encoder_ffn_embed_dim 64, encoder_embed_dim 32 imply \[64, 32\]/,
      );
    });

    test('a config that contradicts the tensors: pre-norm declared for a post-norm checkpoint', async () => {
      const dir = copyOf('post-learned', 'pre-norm-claimed');
      const meta = JSON.parse(readFileSync(join(dir, 'fairseq.json'), 'utf8')) as { model: Record<string, unknown> };
      meta.model = { ...meta.model, encoder_normalize_before: true, decoder_normalize_before: true };
      writeFileSync(join(dir, 'fairseq.json'), JSON.stringify(meta));
      await assertRefused(
        dir,
        /no tensor 'encoder\.layer_norm\.weight' \(fairseq\.json's encoder_embed_dim 32 imply \[32\]\)/,
      );
    });

    test('a frost head declared but its parameter missing, or a frost head in a plain checkpoint', async () => {
      const dir = copyOf('post-learned', 'frost-head-claimed');
      const meta = JSON.parse(readFileSync(join(dir, 'fairseq.json'), 'utf8')) as { model: Record<string, unknown> };
      meta.model = { ...meta.model, frost_head: 'fixed-l2' };
      writeFileSync(join(dir, 'fairseq.json'), JSON.stringify(meta));
      await assertRefused(dir, /unexpected tensor 'decoder\.output_projection\.weight' \[\d+, 32\]/);
    });

    test('a .pt checkpoint: frost reads no pickles, and the line names the converter', async () => {
      const pt = join(tmp, 'post-learned-fairseq', 'checkpoint_best.pt');
      await assertRefused(pt, /PyTorch pickle.*python3 -m frost_torch\.convert_checkpoint checkpoint_best\.pt DIR/);
    });

    test('lightconv: a kernel size in fairseq.json that contradicts the convolution tensor: the key and both shapes', async () => {
      const dir = copyOf('dynamicconv', 'dc-bad-kernel');
      const meta = JSON.parse(readFileSync(join(dir, 'fairseq.json'), 'utf8')) as { model: Record<string, unknown> };
      meta.model = { ...meta.model, decoder_kernel_size_list: [4, 7] };
      writeFileSync(join(dir, 'fairseq.json'), JSON.stringify(meta));
      await assertRefused(
        dir,
        /'decoder\.layers\.1\.conv\.weight_linear\.weight' is \[36, 32\], but fairseq\.json's decoder_kernel_size_list\[1\] 7, decoder_attention_heads 4, encoder_embed_dim 32 imply \[28, 32\]/,
      );
      const light = copyOf('lightconv', 'lc-bad-kernel');
      const lmeta = JSON.parse(readFileSync(join(light, 'fairseq.json'), 'utf8')) as { model: Record<string, unknown> };
      lmeta.model = { ...lmeta.model, encoder_kernel_size_list: [5, 5] };
      writeFileSync(join(light, 'fairseq.json'), JSON.stringify(lmeta));
      await assertRefused(
        light,
        /'encoder\.layers\.1\.conv\.weight' is \[4, 1, 3\], but fairseq\.json's encoder_kernel_size_list\[1\] 5, encoder_attention_heads 4 imply \[4, 1, 5\]/,
      );
    });

    test('lightconv: a missing tensor, a kernel list of the wrong length, settings frost cannot be', async () => {
      const missing = copyOf('lightconv', 'lc-missing-key');
      await editTensors(missing, (t) => delete t['decoder.layers.0.conv_layer_norm.bias']);
      await assertRefused(
        missing,
        /no tensor 'decoder\.layers\.0\.conv_layer_norm\.bias' \(fairseq\.json's encoder_embed_dim 32 imply \[32\]\)/,
      );
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ decoder_kernel_size_list: [3, 5, 7] }, /decoder_kernel_size_list has 3 sizes for 2 decoder_layers/],
        [
          { encoder_conv_type: 'lightweight' },
          /encoder_conv_type 'lightweight' and decoder_conv_type 'dynamic' differ/,
        ],
        [
          { encoder_kernel_size_list: [3, 6] },
          /encoder_kernel_size_list\[1\] is 6: fairseq's encoder cannot run an even kernel/,
        ],
        [{ weight_softmax: false }, /weight_softmax is false/],
        [{ decoder_glu: false }, /encoder_glu true and decoder_glu false differ/],
        [{ decoder_conv_dim: 16 }, /decoder_conv_dim 16 differs from encoder_embed_dim 32/],
        [{ arch: 'lightconv_lm' }, /arch 'lightconv_lm' is a language model/],
      ];
      for (const [i, [change, pattern]] of cases.entries()) {
        const dir = copyOf('dynamicconv', `dc-setting-${i}`);
        const meta = JSON.parse(readFileSync(join(dir, 'fairseq.json'), 'utf8')) as { model: Record<string, unknown> };
        meta.model = { ...meta.model, ...change };
        writeFileSync(join(dir, 'fairseq.json'), JSON.stringify(meta));
        await assertRefused(dir, pattern);
      }
    });

    test("lightconv: the unused conv_bias of fairseq's DynamicConv is not read (it holds 7s here), a stray tensor is refused", async () => {
      const dir = copyOf('dynamicconv', 'dc-extra');
      await editTensors(dir, (t) => {
        assert.deepEqual(t['encoder.layers.0.conv.conv_bias']!.shape, [1, 1, 32]);
        t['decoder.layers.0.conv.weight_linear.bias'] = { shape: [36], data: new Float32Array(36) };
      });
      await assertRefused(
        dir,
        /unexpected tensor 'decoder\.layers\.0\.conv\.weight_linear\.bias' \[36\], not part of this fairseq lightconv model/,
      );
    });

    test('the CLI prints the refusal as one line and exits 1', async () => {
      const dir = copyOf('frost-head', 'cli-refused');
      rmSync(join(dir, 'dict.en.txt'));
      const out = join(tmp, 'cli-refused-run');
      const r = await frostInProcess(['import', 'fairseq', dir, '--out', out]);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /^frost: .*dict\.en\.txt: no such file.*\n$/);
      assert.ok(!existsSync(out));
    });
  },
);
