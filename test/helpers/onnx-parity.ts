/**
 * The ONNX parity check the model tests run after training: both graphs pass ONNX's checker, and onnxruntime's
 * scores match tfjs's within export's tolerance (export/parity.ts) on the given sentences.
 */
import assert from 'node:assert/strict';
import { checkParity, PARITY_TOLERANCE } from '../../export/parity.ts';
import type { Seq2SeqModel } from '../../models/index.ts';
import type { OnnxChecker } from './onnx-checker.ts';

export async function assertOnnxParity(
  checker: OnnxChecker,
  model: Seq2SeqModel,
  samples: Parameters<typeof checkParity>[3],
  bos: number,
  pad: number,
): Promise<void> {
  const { encoder, decoder } = model.toOnnx();
  const [encoderBytes, decoderBytes] = [encoder.toBytes(), decoder.toBytes()];
  await checker.check(encoderBytes);
  await checker.check(decoderBytes);
  const parity = await checkParity(model, encoderBytes, decoderBytes, samples, bos, pad);
  assert.ok(
    parity.maxScaledDiff <= PARITY_TOLERANCE,
    `parity ${parity.maxScaledDiff} at ${JSON.stringify(parity.worst)}`,
  );
}
