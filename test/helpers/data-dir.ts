import { multi30kDir } from '../../train/data/paths.ts';

/**
 * Where the tests find Multi30k: `$FROST_DATA/multi30k`, else `../shared/data/multi30k` beside the
 * checkout (train/data/paths.ts decides, as for training), or null when neither exists, so a test
 * skips rather than fails on a machine without the data.
 */
export function multi30kDirOrNull(): string | null {
  try {
    return multi30kDir();
  } catch {
    return null;
  }
}
