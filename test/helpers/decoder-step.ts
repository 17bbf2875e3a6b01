import { ort } from '../../core/runtime/ort-node.ts';

/**
 * One decoder step of an exported rnn-attn pair on fixed inputs (two source sentences of 5 and 3 tokens, previous
 * tokens 2 and 17): the log-probabilities, for comparing two versions of the same graphs.
 */
export async function decoderStepLogProbs(encoder: Uint8Array, decoder: Uint8Array): Promise<Float32Array> {
  const e = await ort.InferenceSession.create(encoder);
  const d = await ort.InferenceSession.create(decoder);
  const src = BigInt64Array.from({ length: 10 }, (_, i) => BigInt(4 + ((i * 37) % 290)));
  const m = await e.run({
    src_ids: new ort.Tensor('int64', src, [2, 5]),
    src_lengths: new ort.Tensor('int64', BigInt64Array.from([5n, 3n]), [2]),
  });
  const out = await d.run({
    prev_token: new ort.Tensor('int64', BigInt64Array.from([2n, 17n]), [2]),
    state: m.state!,
    enc_out: m.enc_out!,
    enc_keys: m.enc_keys!,
    src_mask: m.src_mask!,
  });
  return out.log_probs!.data as Float32Array;
}

/**
 * The encoder's outputs for two fixed source sentences, of 5 and 3 tokens (ids 4 to 11, each capped at the
 * vocabulary's last id), padded to one [2, 5] batch: the inputs browser tests give both runtimes' decoders.
 */
export async function encodeFixedSources(
  encoderFile: string,
  sourceVocabSize: number,
): Promise<ort.InferenceSession.ReturnType> {
  const encoder = await ort.InferenceSession.create(encoderFile);
  const S = 5;
  const ids = [4, 5, 6, 7, 8, 9, 10, 11, 0, 0].map((i) => Math.min(i, sourceVocabSize - 1));
  const encoded = await encoder.run({
    src_ids: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [2, S]),
    src_lengths: new ort.Tensor('int64', BigInt64Array.from([5, 3], BigInt), [2]),
  });
  await encoder.release();
  return encoded;
}
