/** One run of identical ConvS2S convolution layers. */
export interface Convs2sLayerSpec {
  channels: number;
  width: number;
}

/**
 * A stack as `channels:width*count` runs joined by commas, fairseq's `[(512, 3)] * 9 + [(1024, 3)] * 4`
 * written as `512:3*9,1024:3*4` (`*count` may be left out for one layer).
 */
export const CONVS2S_LAYERS_PATTERN = /^\s*\d+:\d+(\*\d+)?(\s*,\s*\d+:\d+(\*\d+)?)*\s*$/;

/** The layers of a stack, one entry per layer. */
export function parseConvs2sLayers(spec: string, setting: string): Convs2sLayerSpec[] {
  if (!CONVS2S_LAYERS_PATTERN.test(spec))
    throw new RangeError(`convs2s: setting '${setting}' expects channels:width*count joined by commas, got "${spec}"`);
  const layers: Convs2sLayerSpec[] = [];
  for (const run of spec.split(',')) {
    const [shape, count = '1'] = run.trim().split('*');
    const [channels, width] = shape!.split(':').map(Number);
    if (!(channels! > 0 && width! > 0 && Number(count) > 0))
      throw new RangeError(`convs2s: setting '${setting}': channels, width and count must be positive in "${run}"`);
    for (let i = 0; i < Number(count); i++) layers.push({ channels: channels!, width: width! });
  }
  return layers;
}
