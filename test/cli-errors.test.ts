/**
 * CLI errors a user makes (issue #20, point 10) end in one line naming the flag or the file, not a
 * schema dump, a bare "Unexpected end of JSON input", a raw ENOENT or a tfjs error at export.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

const BIN = join(import.meta.dirname, '..', 'bin', 'frost.js');
let root: string;

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'frost-cli-errors-'));
});

after(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Runs frost; returns its exit code and the lines it wrote to stderr, less the backend banner. */
function frost(...args: string[]): { code: number | null; lines: string[] } {
  const run = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 120_000 });
  const lines = run.stderr.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('tfjs backend:'));
  return { code: run.status, lines };
}

/** Exit 1 with an error line matching `first`, at most a usage hint after it, and no stack or JSON. */
function assertOneLine(r: { code: number | null; lines: string[] }, first: RegExp): void {
  assert.equal(r.code, 1, r.lines.join('\n'));
  assert.match(r.lines[0] ?? '', first, r.lines.join('\n'));
  assert.ok(r.lines.length <= 2, `at most the error and a usage hint:\n${r.lines.join('\n')}`);
  if (r.lines[1] !== undefined) assert.match(r.lines[1], /--help/);
  assert.doesNotMatch(r.lines.join('\n'), /^\s+at |"code":|\[\s*\{/m);
}

test('--seed abc and --seed -5 name the flag', () => {
  for (const seed of ['abc', '-5', '1.5']) {
    assertOneLine(
      frost('train', '--data', root, '--out', join(root, 'run'), '--seed', seed),
      new RegExp(`--seed must be an integer .*'${seed.replace('.', '\\.')}'`),
    );
  }
});

test('a corrupt config.json is named with its path', async () => {
  const run = join(root, 'bad-run');
  await mkdir(run, { recursive: true });
  await writeFile(join(run, 'config.json'), '{"task": "transl');
  assertOneLine(
    frost('export', run, '--out', join(root, 'out')),
    new RegExp(`${join(run, 'config.json')}: not valid JSON`),
  );
});

test('an empty validation split is refused before training', async () => {
  const data = join(root, 'empty-val');
  await mkdir(data, { recursive: true });
  for (const split of ['train', 'test']) {
    await writeFile(join(data, `${split}.src`), 'a b\nc d\n');
    await writeFile(join(data, `${split}.tgt`), 'x y\nz w\n');
  }
  await writeFile(join(data, 'val.src'), '');
  await writeFile(join(data, 'val.tgt'), '');
  const r = frost(
    'train',
    '--data',
    data,
    '--src',
    'src',
    '--tgt',
    'tgt',
    '--out',
    join(root, 'run-empty'),
    '--preset',
    'tiny',
    '--epochs',
    '1',
    '--quiet',
  );
  assertOneLine(r, new RegExp(`${data}: the val split \\(val\\.src, val\\.tgt\\) has no sentence pairs`));
});

test('frost caption M missing.jpg names the file', async () => {
  assertOneLine(
    frost('caption', root, join(root, 'missing.jpg')),
    new RegExp(`${join(root, 'missing.jpg')}: no such file$`),
  );
  assertOneLine(frost('caption', root, root), new RegExp(`${root}: a directory, not an image file$`));
});
