/**
 * What onnxruntime-node makes of a model: the graph it actually runs after its optimisations
 * (constant folding included), read back through the `optimizedModelFilePath` session option.
 * Used to check that subgraphs meant to be folded at session creation are folded.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ort } from '../../core/runtime/ort-node.ts';
import { decodeModel } from '../../core/onnx/proto.ts';

/**
 * The op types left in the graph onnxruntime-node actually runs (after its optimisations, constant
 * folding included), read back from `optimizedModelFilePath`.
 */
export async function optimizedOpTypes(bytes: Uint8Array): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'frost-optimized-'));
  try {
    const path = join(dir, 'optimized.onnx');
    const session = await ort.InferenceSession.create(bytes, {
      graphOptimizationLevel: 'all',
      optimizedModelFilePath: path,
      // Quiet: onnxruntime warns that an 'all'-level optimised model is hardware specific; it is only read back here.
      logSeverityLevel: 3,
    });
    await session.release();
    const model = decodeModel(readFileSync(path)) as { graph?: { node?: { opType?: string; op_type?: string }[] } };
    return (model.graph?.node ?? []).map((n) => n.opType ?? n.op_type ?? '?');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
