/**
 * The architectures a benchmark takes, read from models/archs' registry, so that an architecture registered there
 * is benchmarked (and named in each bench's --help) with no edit under bench/.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { archNames, getArch } from '../models/index.ts';
import type { InputKind } from '../models/index.ts';
import { REPO_ROOT } from '../train/data/paths.ts';

/** The architecture a bench measures unless told otherwise: the paper's (its figures are the README's). */
export const DEFAULT_BENCH_ARCH = 'rnn-attn';

/**
 * Whether bench:train and train-profile train `arch` on one joint vocabulary with the source and target embedding
 * shared, unless told (--joint): what the architecture declares (`jointVocabulary`, models/archs/types.ts).
 */
export function jointByDefault(arch: string): boolean {
  return getArch(arch).jointVocabulary ?? false;
}

/** Registered architectures whose encoder reads `kind`: 'tokens' (translation) or 'image' (captioning). */
export function archsReading(kind: InputKind): string[] {
  return archNames({ family: 'seq2seq' }).filter((name) => getArch(name).inputKind === kind);
}

/**
 * `--arch` values (comma-separated) checked against `allowed`; none given: all of them.
 * @throws RangeError naming the allowed architectures
 */
export function pickArchs(spec: string | undefined, allowed: readonly string[], flag = '--arch'): string[] {
  if (spec === undefined) return [...allowed];
  const picked = spec.split(',').filter(Boolean);
  for (const arch of picked)
    if (!allowed.includes(arch)) throw new RangeError(`${flag} takes ${allowed.join(', ')}; got '${arch}'`);
  return picked;
}

/**
 * The PyTorch peer that trains an architecture the way bench:train's frost side does, by convention
 * `bench/peer/<name, '-' as '_'>.py` (repository-relative); undefined when none is written, and bench:train then
 * measures frost alone.
 */
export function trainPeerScript(arch: string): string | undefined {
  const path = `bench/peer/${arch.replaceAll('-', '_')}.py`;
  return existsSync(join(REPO_ROOT, path)) ? path : undefined;
}

/** A bench's `--help`: its usage lines, then what `--arch` takes, listed from the registry. */
export function archHelp(usage: string, flag: string, archs: readonly string[], several = false): string {
  return `${usage.trim()}\n\n${flag} takes ${several ? 'one or more, comma-separated, of' : 'one of'}: ${archs.join(', ')}\n`;
}
