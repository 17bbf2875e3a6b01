import type { LightConvModel } from './lightconv.ts';
import type { OnnxGraphOptions, Seq2SeqModel } from './types.ts';

export function lightconvOnnx(_model: LightConvModel, _opts: OnnxGraphOptions): ReturnType<Seq2SeqModel['toOnnx']> {
  throw new Error('lightconv export: not yet');
}
