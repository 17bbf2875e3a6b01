/**
 * The Transformer's, ConvS2S's, DynamicConv's and the captioners' decoder steps return each row's top-k log-probs
 * (card `graphs.decoder.top`), as rnn-attn's do (runtime-top-candidates.test.ts): for each, the
 * candidates are the whole rows' top k over several cached steps, greedy and beam search from them
 * give exactly the hypotheses (tokens, scores, log-probs) of search over whole rows of the same
 * export, and the same model exported without them (a file from before) still loads and decodes,
 * from whole rows, to the same results. Parity of these graphs with tfjs is held by
 * transformer-model, convs2s, lightconv-export and caption-model tests, which export the same graphs.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ort } from '../core/runtime/ort-node.ts';
import { writeBenchModel, type BenchModel } from '../bench/decode-model.ts';
import { generate } from '../core/decode/generate.ts';
import { gatheredTables } from '../core/onnx/gathered-rows.ts';
import { decodeModel } from '../core/onnx/proto.ts';
import { SeededRandom } from '../core/random.ts';
import { CaptionRuntime } from '../core/runtime/caption.ts';
import { loadModelDir } from '../core/runtime/load-node.ts';
import type { DecoderState } from '../core/runtime/row-state.ts';
import type { Seq2SeqRuntime } from '../core/runtime/seq2seq.ts';
import type { Precision } from '../export/precision.ts';
import { DECODER_TOP_K, TOP_LOG_PROBS, TOP_TOKENS } from '../models/archs/graph-spec.ts';
import { archNames, buildModel, getArch, resolveArchConfig } from '../models/index.ts';
import { initBackend } from '../train/backend/select.ts';
import { assertTopIsWholeRowsTopK, tokenSources, topAndWholeRows } from './helpers/top-candidates.ts';

const SRC_VOCAB = 90;
const TGT_VOCAB = 70;
const IMAGE_SIZE = 32;
const SEARCHES = [
  { beam: 1, maxLen: 12 },
  { beam: 1, minLen: 6, maxLen: 6 },
  { beam: 4, maxLen: 10, nBest: 2 },
  { beam: 5, minLen: 5, maxLen: 7 },
];

let root: string;
before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  root = await mkdtemp(join(tmpdir(), 'frost-top-candidates-archs-'));
});
after(() => rm(root, { recursive: true, force: true }));

/** `n` seeded normalised images [3, size, size]. */
function images(n: number): Float32Array[] {
  const rng = new SeededRandom(4, 'top-candidates-images');
  return Array.from({ length: n }, () =>
    Float32Array.from({ length: 3 * IMAGE_SIZE * IMAGE_SIZE }, () => rng.normal()),
  );
}

/** The decoder's initial state for `n` inputs: token sources, or images for a caption model. */
function encoder(rt: Seq2SeqRuntime): (n: number) => Promise<DecoderState> {
  if (rt.card.task === 'translation') return (n) => rt.encode(tokenSources(n, SRC_VOCAB));
  return (n) => {
    const pixels = new Float32Array(n * 3 * IMAGE_SIZE * IMAGE_SIZE);
    images(n).forEach((im, i) => pixels.set(im, i * im.length));
    return rt.encodeFeeds({ pixels: new ort.Tensor('float32', pixels, [n, 3, IMAGE_SIZE, IMAGE_SIZE]) }, n);
  };
}

describe('every registered architecture', () => {
  it('reading text: src_ids index one stored table of |V_src| rows, which a card is checked against at load', () => {
    for (const arch of archNames({ family: 'seq2seq' })) {
      const def = getArch(arch);
      if (def.inputKind === 'image') continue;
      const preset = 'tiny' in def.presets ? 'tiny' : Object.keys(def.presets)[0]!;
      const sizes = { srcVocab: SRC_VOCAB, tgtVocab: TGT_VOCAB };
      const model = buildModel(arch, resolveArchConfig(arch, preset), sizes, { name: 'learned' }, 1);
      try {
        const tables = gatheredTables(model.toOnnx().encoder.toBytes(), 'src_ids');
        assert.deepEqual(
          tables.map((t) => t.rows),
          [SRC_VOCAB],
          arch,
        );
      } finally {
        model.params.dispose();
      }
    }
  });

  it('exports the top-k outputs, and its card names them (k = min(16, |V|)), so none decodes from whole rows', () => {
    for (const arch of archNames({ family: 'seq2seq' })) {
      const def = getArch(arch);
      const preset = 'tiny' in def.presets ? 'tiny' : Object.keys(def.presets)[0]!;
      for (const tgtVocab of [TGT_VOCAB, 9]) {
        const sizes =
          def.inputKind === 'image'
            ? { tgtVocab, image: { kind: 'pixels', size: IMAGE_SIZE } as const }
            : { srcVocab: SRC_VOCAB, tgtVocab };
        const model = buildModel(arch, resolveArchConfig(arch, preset), sizes, { name: 'learned' }, 1);
        try {
          const { decoder, graphs } = model.toOnnx();
          const k = Math.min(DECODER_TOP_K, tgtVocab);
          assert.deepEqual(graphs.decoder.top, { logProbs: TOP_LOG_PROBS, tokens: TOP_TOKENS, k }, arch);
          const outputs = decoder.toGraphProto().output.map((o) => o.name);
          assert.ok(outputs.includes(TOP_LOG_PROBS) && outputs.includes(TOP_TOKENS), `${arch}: ${outputs.join(', ')}`);
        } finally {
          model.params.dispose();
        }
      }
    }
  });
});

for (const arch of ['transformer', 'convs2s', 'dynamicconv', 'show-tell', 'show-attend-tell']) {
  describe(`${arch} top-k decoder outputs`, () => {
    // The Transformer also through the precision passes (fp16 Casts, int8-compute's integer MatMuls).
    const precisions: Precision[] = arch === 'transformer' ? ['fp32', 'fp16', 'int8-compute'] : ['fp32'];
    const models = new Map<Precision, BenchModel>();
    let model: BenchModel;
    let old: BenchModel;
    before(async () => {
      const opts = { arch, head: 'learned', preset: 'tiny', srcVocab: SRC_VOCAB, tgtVocab: TGT_VOCAB };
      for (const precision of precisions)
        models.set(
          precision,
          await writeBenchModel(join(root, arch, precision), { ...opts, precision, imageSize: IMAGE_SIZE }),
        );
      model = models.get('fp32')!;
      old = await writeBenchModel(join(root, `${arch}-old`), { ...opts, imageSize: IMAGE_SIZE, topK: false });
    });

    it("are named in the card and are each whole row's top k at every step, in core/decode's order", async () => {
      assert.deepEqual(model.card.graphs.decoder.top, {
        logProbs: TOP_LOG_PROBS,
        tokens: TOP_TOKENS,
        k: DECODER_TOP_K,
      });
      const rt = await loadModelDir(model.dir, { intraOpNumThreads: 1 });
      try {
        assert.equal(rt.stepModel.topK, DECODER_TOP_K);
        const initial = encoder(rt);
        // Several steps: the Transformer's key/value caches grow, ConvS2S's and DynamicConv's windows shift.
        await assertTopIsWholeRowsTopK(rt.stepModel, () => initial(5), 4);
      } finally {
        await rt.release();
      }
    });

    for (const precision of precisions) {
      it(`${precision}: greedy and beam from candidates give the hypotheses of whole rows`, async () => {
        const rt = await loadModelDir(models.get(precision)!.dir, { intraOpNumThreads: 1 });
        try {
          assert.equal(rt.stepModel.topK, DECODER_TOP_K);
          const initial = encoder(rt);
          for (const opts of SEARCHES) {
            const { top, whole, topSteps } = topAndWholeRows(rt.stepModel);
            const a = await generate(top, await initial(7), 7, opts);
            const b = await generate(whole, await initial(7), 7, opts);
            assert.deepEqual(a, b, JSON.stringify(opts));
            assert.ok(topSteps() > 0, `${JSON.stringify(opts)}: stepTop was used`);
          }
        } finally {
          await rt.release();
        }
      });
    }

    it('the same model exported without them (no TopK node, no graphs.decoder.top) decodes from whole rows, with the same results', async () => {
      assert.equal(old.card.graphs.decoder.top, undefined);
      const graph = decodeModel(await readFile(join(old.dir, old.card.graphs.decoder.file))) as {
        graph: { node: { opType?: string; op_type?: string }[]; output: { name: string }[] };
      };
      assert.ok(!graph.graph.node.some((n) => (n.op_type ?? n.opType) === 'TopK'), 'the old graph has no TopK node');
      assert.deepEqual(
        graph.graph.output.filter((o) => o.name.startsWith('top_')),
        [],
        'the old graph has no top-k outputs',
      );
      const [oldRt, rt] = [
        await loadModelDir(old.dir, { intraOpNumThreads: 1 }),
        await loadModelDir(model.dir, { intraOpNumThreads: 1 }),
      ];
      try {
        assert.equal(oldRt.stepModel.stepTop, undefined);
        assert.equal(oldRt.stepModel.topK, undefined);
        const [initialOld, initial] = [encoder(oldRt), encoder(rt)];
        for (const beam of [1, 3]) {
          const a = await generate(oldRt.stepModel, await initialOld(6), 6, { beam, maxLen: 9 });
          const b = await generate(rt.stepModel, await initial(6), 6, { beam, maxLen: 9 });
          assert.deepEqual(a, b, `beam ${beam}`);
        }
        // And through the user-facing calls.
        if (rt.card.task === 'translation') {
          const texts = [model.sourceWords.slice(0, 3).join(' '), model.sourceWords.slice(40, 42).join(' ')];
          assert.deepEqual(await oldRt.translate(texts, { beam: 2 }), await rt.translate(texts, { beam: 2 }));
        } else {
          const [a, b] = [CaptionRuntime.fromRuntime(oldRt), CaptionRuntime.fromRuntime(rt)];
          assert.deepEqual(await a.caption(images(3), { beam: 3 }), await b.caption(images(3), { beam: 3 }));
          assert.deepEqual(await a.caption(images(2), { beam: 1 }), await b.caption(images(2), { beam: 1 }));
        }
      } finally {
        await oldRt.release();
        await rt.release();
      }
    });
  });
}
