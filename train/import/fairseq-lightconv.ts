/**
 * fairseq's `lightconv` architectures (Wu et al.'s LightConv and DynamicConv, fairseq/models/lightconv.py) as frost's
 * `lightconv` / `dynamicconv`: the part of `frost import fairseq` (fairseq.ts) that is theirs. Everything every
 * fairseq model shares (the dictionaries and ids, the embeddings, the output layer or frost head, the pre-norm stacks'
 * final layer norms, the checks and the run folder) stays in fairseq.ts; this file reads the convolution settings,
 * says which tensors each layer has, and maps them onto frost's LightConv layers (models/archs/lightconv-weights.ts).
 *
 * fairseq 0.12's layer names (fairseq/models/lightconv.py at 3d262bb): an encoder layer has linear1 (d → 2d with
 * encoder_glu, else d), conv, linear2, fc1, fc2, layer_norm1 (the convolution block's) and layer_norm2; a decoder
 * layer linear1, conv, linear2, conv_layer_norm, encoder_attn (fairseq's MultiheadAttention), encoder_attn_layer_norm,
 * fc1, fc2, final_layer_norm. The convolution: LightweightConv1dTBC's `conv.weight` [H, 1, K] (or the CUDA
 * LightconvLayer's [H, K]), or DynamicConv's `conv.weight_linear.weight` [H·K, d] (no bias), whose
 * `conv.conv_bias` DynamicConv_scripatable registers always and adds only with conv_bias, which lightconv never
 * sets: it is ignored, as are fairseq's bookkeeping buffers.
 */
import { z } from 'zod';
import { parseWith, refuse, size } from './import-files.ts';
import type { ExpectedShapes, TensorMapper } from './transformer-tensors.ts';

/** fairseq's lightconv arch names (`lightconv`, `lightconv_iwslt_de_en`, `lightconv_wmt_en_de_big`, …). */
export const isLightconvArch = (arch: string) => /^lightconv/.test(arch);

const kernelList = z.union([z.array(z.number().int()), z.string()]);
const bool = z.boolean().nullish();
/** The lightconv settings of fairseq.json's model args, under fairseq's names. */
const lightconvArgsSchema = z.looseObject({
  encoder_embed_dim: size(),
  encoder_layers: size(),
  decoder_layers: size(),
  encoder_attention_heads: size(),
  encoder_conv_dim: size().nullish(),
  decoder_conv_dim: size().nullish(),
  encoder_kernel_size_list: kernelList.nullish(),
  decoder_kernel_size_list: kernelList.nullish(),
  encoder_glu: bool,
  decoder_glu: bool,
  encoder_conv_type: z.string().nullish(),
  decoder_conv_type: z.string().nullish(),
  weight_softmax: bool,
});

/** What frost needs to know of a fairseq lightconv model besides what every fairseq model has. */
export interface LightconvShape {
  /** frost's architecture: `lightconv` (lightweight convolutions) or `dynamicconv` (dynamic ones). */
  arch: 'lightconv' | 'dynamicconv';
  conv: 'lightweight' | 'dynamic';
  d: number;
  heads: number;
  glu: boolean;
  encoderKernels: number[];
  decoderKernels: number[];
}

/** fairseq's eval_str_list: a list, or its text ("[3,7,15]"); one width stands for every layer (base_architecture). */
function kernels(raw: unknown, key: string, layers: number, where: string): number[] {
  // fairseq's defaults (base_architecture) where the args do not say.
  const fallback = key.startsWith('encoder') ? [3, 7, 15, 31, 31, 31, 31] : [3, 7, 15, 31, 31, 31];
  let list: unknown = raw ?? fallback;
  if (typeof list === 'string') {
    try {
      list = JSON.parse(list.replace(/\(/g, '[').replace(/\)/g, ']'));
    } catch {
      refuse(`${where}: ${key} ${JSON.stringify(raw)} is not a list of kernel sizes`);
    }
  }
  if (typeof list === 'number') list = [list];
  if (!Array.isArray(list) || list.length === 0 || list.some((k) => !Number.isInteger(k) || (k as number) < 1))
    refuse(`${where}: ${key} ${JSON.stringify(raw)} is not a list of positive kernel sizes`);
  const widths = list as number[];
  const out = widths.length === 1 ? Array.from({ length: layers }, () => widths[0]!) : widths;
  if (out.length !== layers)
    refuse(
      `${where}: ${key} has ${out.length} sizes for ${layers} ${key.split('_')[0]}_layers (fairseq refuses it too)`,
    );
  return out;
}

/**
 * The checked lightconv settings, each default fairseq's (base_architecture, the parser); refuses, in one line, what
 * frost's LightConv cannot be.
 */
export function lightconvShape(model: Record<string, unknown>, where: string): LightconvShape {
  const a = parseWith(lightconvArgsSchema, model, `${where}: model`);
  const no = (what: string) => refuse(`${where}: ${what}`);
  const d = a.encoder_embed_dim;
  const encoderConv = a.encoder_conv_type ?? 'dynamic';
  const decoderConv = a.decoder_conv_type ?? 'dynamic';
  for (const [key, kind] of [
    ['encoder_conv_type', encoderConv],
    ['decoder_conv_type', decoderConv],
  ] as const)
    if (kind !== 'lightweight' && kind !== 'dynamic') no(`${key} '${kind}' is not lightweight or dynamic`);
  if (encoderConv !== decoderConv)
    no(
      `encoder_conv_type '${encoderConv}' and decoder_conv_type '${decoderConv}' differ; frost's lightconv and dynamicconv use one kind throughout`,
    );
  if (a.weight_softmax === false)
    no("weight_softmax is false; frost normalises every convolution kernel with a softmax (fairseq's default)");
  const [encoderGlu, decoderGlu] = [a.encoder_glu ?? true, a.decoder_glu ?? true];
  if (encoderGlu !== decoderGlu)
    no(`encoder_glu ${encoderGlu} and decoder_glu ${decoderGlu} differ; frost's LightConv has one glu setting`);
  for (const key of ['encoder_conv_dim', 'decoder_conv_dim'] as const)
    if (a[key] != null && a[key] !== d)
      no(`${key} ${a[key]} differs from encoder_embed_dim ${d}; frost's convolutions run over the model's d channels`);
  const encoderKernels = kernels(a.encoder_kernel_size_list, 'encoder_kernel_size_list', a.encoder_layers, where);
  const decoderKernels = kernels(a.decoder_kernel_size_list, 'decoder_kernel_size_list', a.decoder_layers, where);
  encoderKernels.forEach((K, l) => {
    if (K % 2 === 0)
      no(
        `encoder_kernel_size_list[${l}] is ${K}: fairseq's encoder cannot run an even kernel (its padding_l is then a tuple)`,
      );
  });
  const conv = encoderConv as LightconvShape['conv'];
  return {
    arch: conv === 'lightweight' ? 'lightconv' : 'dynamicconv',
    conv,
    d,
    heads: a.encoder_attention_heads,
    glu: encoderGlu,
    encoderKernels,
    decoderKernels,
  };
}

/** Passes the tensors of every lightconv layer to `shapes` (fairseq.ts's expected tensors). */
export function lightconvExpected(s: LightconvShape, shapes: ExpectedShapes): void {
  const { d, heads: H } = s;
  const dim = `encoder_embed_dim ${d}`;
  const convBlock = (stack: 'encoder' | 'decoder', l: number, K: number) => {
    const p = `${stack}.layers.${l}`;
    shapes.linear(`${p}.linear1`, s.glu ? 2 * d : d, d, `${stack}_glu ${s.glu}, ${dim}`);
    const from = `${stack}_kernel_size_list[${l}] ${K}, ${stack}_attention_heads ${H}`;
    if (s.conv === 'lightweight') shapes.add(`${p}.conv.weight`, [H, 1, K], from, [H, K]);
    else shapes.add(`${p}.conv.weight_linear.weight`, [H * K, d], `${from}, ${dim}`);
    shapes.linear(`${p}.linear2`, d, d, dim);
  };
  s.encoderKernels.forEach((K, l) => {
    const p = `encoder.layers.${l}`;
    convBlock('encoder', l, K);
    shapes.norm(`${p}.layer_norm1`);
    shapes.feedForward(p);
    shapes.norm(`${p}.layer_norm2`);
  });
  s.decoderKernels.forEach((K, l) => {
    const p = `decoder.layers.${l}`;
    convBlock('decoder', l, K);
    shapes.norm(`${p}.conv_layer_norm`);
    shapes.attention(`${p}.encoder_attn`);
    shapes.norm(`${p}.encoder_attn_layer_norm`);
    shapes.feedForward(p);
    shapes.norm(`${p}.final_layer_norm`);
  });
}

/**
 * DynamicConv_scripatable's `conv.conv_bias` [1, 1, d]: registered always (uninitialised), added only with conv_bias,
 * which fairseq's lightconv never sets; not read.
 */
export function unusedLightconvTensor(s: LightconvShape, name: string, shape: readonly number[]): boolean {
  return (
    s.conv === 'dynamic' &&
    /^(encoder|decoder)\.layers\.\d+\.conv\.conv_bias$/.test(name) &&
    shape.reduce((a, b) => a * b, 1) === s.d
  );
}

/** frost's LightConv layer tensors (models/archs/lightconv-weights.ts) from fairseq's, appended to `map.out`. */
export function lightconvLayers(s: LightconvShape, map: TensorMapper): void {
  const { d, heads: H } = s;
  const convBlock = (from: string, frost: string, K: number) => {
    map.linear(`${from}.linear1`, `${frost}/Win`, `${frost}/bin`, s.glu ? 2 * d : d, d);
    if (s.conv === 'lightweight') map.copy(`${from}.conv.weight`, `${frost}/kernel`, [H, K]);
    else map.matrix(`${from}.conv.weight_linear.weight`, `${frost}/kernel`, H * K, d);
    map.linear(`${from}.linear2`, `${frost}/Wout`, `${frost}/bout`, d, d);
  };
  s.encoderKernels.forEach((K, l) => {
    const [from, frost] = [`encoder.layers.${l}`, `encoder/layer${l}`];
    convBlock(from, `${frost}/conv`, K);
    map.norm(`${from}.layer_norm1`, `${frost}/ln1`);
    map.feedForward(from, `${frost}/ff`);
    map.norm(`${from}.layer_norm2`, `${frost}/ln2`);
  });
  s.decoderKernels.forEach((K, l) => {
    const [from, frost] = [`decoder.layers.${l}`, `decoder/layer${l}`];
    convBlock(from, `${frost}/conv`, K);
    map.norm(`${from}.conv_layer_norm`, `${frost}/ln1`);
    map.attention(`${from}.encoder_attn`, `${frost}/cross`);
    map.norm(`${from}.encoder_attn_layer_norm`, `${frost}/ln2`);
    map.feedForward(from, `${frost}/ff`);
    map.norm(`${from}.final_layer_norm`, `${frost}/ln3`);
  });
}

/** The run config's archConfig of frost's lightconv / dynamicconv (models/archs/lightconv.ts's settings). */
export function lightconvArchConfig(
  s: LightconvShape,
  a: {
    decoder_layers: number;
    encoder_layers: number;
    encoder_ffn_embed_dim: number;
    pre: boolean;
    maxPositions: number;
  },
) {
  return {
    encoderLayers: a.encoder_layers,
    decoderLayers: a.decoder_layers,
    model: s.d,
    heads: s.heads,
    ff: a.encoder_ffn_embed_dim,
    encoderKernels: s.encoderKernels,
    decoderKernels: s.decoderKernels,
    glu: s.glu,
    weightDropout: 0,
    dropout: 0,
    attentionDropout: 0,
    activationDropout: 0,
    norm: a.pre ? 'pre' : 'post',
    positions: 'sinusoidal-fairseq',
    maxPositions: a.maxPositions,
  };
}
