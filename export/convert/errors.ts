/**
 * Errors of the converter. A layer that cannot be converted is never dropped:
 * its handler throws {@link UnsupportedLayerError}, the driver collects every
 * such layer of the model and throws one {@link UnsupportedLayersError}
 * listing them all (as tf2onnx does), so one run shows all the work left.
 */

/** Thrown by a handler: this layer (class or config) has no ONNX conversion. */
export class UnsupportedLayerError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'UnsupportedLayerError';
  }
}

/** One layer the converter refused. */
export interface UnsupportedLayer {
  name: string;
  className: string;
  reason: string;
}

/** Every layer of a model that could not be converted. */
export class UnsupportedLayersError extends Error {
  constructor(readonly layers: UnsupportedLayer[]) {
    const lines = layers.map((l) => `  - ${l.name} (${l.className}): ${l.reason}`);
    super(`cannot convert ${layers.length} layer(s):\n${lines.join('\n')}`);
    this.name = 'UnsupportedLayersError';
  }
}

/** Shorthand for handlers: `throw unsupported('...')`. */
export function unsupported(reason: string): UnsupportedLayerError {
  return new UnsupportedLayerError(reason);
}
