/**
 * A 5 MB tmpfs for the full-disk tests (issue #39 item 5), mounted before the suite that calls
 * {@link smallDisk} and unmounted after it. Mounting needs root (the tests run as root here and in CI);
 * where it fails, `mounted` stays false and each test skips, saying why.
 */
import { execFileSync } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, type TestContext } from 'node:test';

export interface SmallDisk {
  /** The mount point: `<parent>/<name>`. */
  readonly path: string;
  readonly mounted: boolean;
  /** Skips `t` (true) when no disk could be mounted. */
  skipped(t: TestContext): boolean;
}

/** A tmpfs of `size` mounted at `<parent>/<name>` for the suite. */
export function smallDisk(parent: () => string, name = 'small', size = '5m'): SmallDisk {
  const disk = {
    path: '',
    mounted: false,
    skipped(t: TestContext) {
      if (!disk.mounted) t.skip(`cannot mount a ${size} tmpfs here (needs root)`);
      return !disk.mounted;
    },
  };
  before(async () => {
    disk.path = join(parent(), name);
    await mkdir(disk.path, { recursive: true });
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', disk.path], { stdio: 'pipe' });
      disk.mounted = true;
    } catch {
      /* not root, or no mount: each test says so and skips */
    }
  });
  after(() => {
    if (disk.mounted) execFileSync('umount', [disk.path]);
  });
  return disk;
}
