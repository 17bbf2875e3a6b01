/**
 * Typed reads of a serialised layer config. model.json configs use Keras'
 * snake_case keys (`return_sequences`); camelCase (`returnSequences`) is
 * accepted too, since hand-written and older files mix them.
 */
import { UnsupportedLayerError } from './errors.ts';

const camel = (key: string): string => key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** Reads one layer's config; a wrong type is a conversion error that names the layer and key. */
export class LayerConfig {
  constructor(
    readonly raw: Record<string, unknown>,
    private readonly layer: string,
  ) {}

  /** The raw value under `key` (snake_case) or its camelCase form. */
  get(key: string): unknown {
    return key in this.raw ? this.raw[key] : this.raw[camel(key)];
  }

  private fail(key: string, want: string): never {
    throw new Error(`layer '${this.layer}': config ${key} = ${JSON.stringify(this.get(key))} is not ${want}`);
  }

  number(key: string, fallback?: number): number {
    const v = this.get(key);
    if (v == null && fallback !== undefined) return fallback;
    return typeof v === 'number' ? v : this.fail(key, 'a number');
  }

  string(key: string, fallback?: string): string {
    const v = this.get(key);
    if (v == null && fallback !== undefined) return fallback;
    return typeof v === 'string' ? v : this.fail(key, 'a string');
  }

  bool(key: string, fallback: boolean): boolean {
    const v = this.get(key);
    if (v == null) return fallback;
    return typeof v === 'boolean' ? v : this.fail(key, 'a boolean');
  }

  /** A list of `n` integers; a single number is repeated (Keras' `kernel_size=3` for `(3, 3)`). */
  ints(key: string, n: number, fallback?: number[]): number[] {
    const v = this.get(key);
    if (v == null && fallback !== undefined) return fallback;
    if (typeof v === 'number') return new Array<number>(n).fill(v);
    if (Array.isArray(v) && v.length === n && v.every((x) => Number.isInteger(x))) return v as number[];
    return this.fail(key, `${n} integer(s)`);
  }

  /** Refuses the layer when `key` is set to something other than its neutral value(s). */
  refuseUnless(key: string, ...neutral: unknown[]): void {
    const v = this.get(key);
    if (!neutral.some((n) => JSON.stringify(n) === JSON.stringify(v))) {
      throw new UnsupportedLayerError(`${key}=${JSON.stringify(v)} is not supported`);
    }
  }
}
