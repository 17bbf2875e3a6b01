/**
 * CLI errors a user makes (issue #20, point 10) end in one line naming the flag or the file, not a
 * schema dump, a bare "Unexpected end of JSON input", a raw ENOENT or a tfjs error at export.
 * bin/frost.js runs in a child for each way an error reaches the shell (commander's usage error, a
 * command's thrown error: clients/cli/main.ts prints it); the other cases run the command in this
 * process (helpers/frost-in-process.ts does what main.ts does with an error), sparing a child's start-up.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Command } from 'commander';
import { commands } from '../clients/cli/commands/index.ts';
import { commandLoaders, commandsFor } from '../clients/cli/commands/loaders.ts';
import { frostInProcess } from './helpers/frost-in-process.ts';

const BIN = join(import.meta.dirname, '..', 'bin', 'frost.js');
let root: string;

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'frost-cli-errors-'));
});

after(async () => {
  await rm(root, { recursive: true, force: true });
});

interface Exit {
  code: number | null;
  lines: string[];
}

/** The lines written to stderr, less the backend banner. */
const userLines = (stderr: string) =>
  stderr.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('tfjs backend:'));

/** Runs bin/frost.js in a child; returns its exit code and the lines it wrote to stderr. */
function frostChild(...args: string[]): Exit {
  const run = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 120_000 });
  return { code: run.status, lines: userLines(run.stderr) };
}

/** Runs the command in this process, as frostChild reports it. */
async function frost(...args: string[]): Promise<Exit> {
  const run = await frostInProcess(args);
  return { code: run.code, lines: userLines(run.stderr) };
}

/** Exit 1 with an error line matching `first`, at most a usage hint after it, and no stack or JSON. */
function assertOneLine(r: Exit, first: RegExp): void {
  assert.equal(r.code, 1, r.lines.join('\n'));
  assert.match(r.lines[0] ?? '', first, r.lines.join('\n'));
  assert.ok(r.lines.length <= 2, `at most the error and a usage hint:\n${r.lines.join('\n')}`);
  if (r.lines[1] !== undefined) assert.match(r.lines[1], /--help/);
  assert.doesNotMatch(r.lines.join('\n'), /^\s+at |"code":|\[\s*\{/m);
}

test('--seed abc and --seed -5 name the flag', async () => {
  for (const seed of ['abc', '-5', '1.5']) {
    const args = ['train', '--data', root, '--out', join(root, 'run'), '--seed', seed];
    assertOneLine(
      seed === 'abc' ? frostChild(...args) : await frost(...args),
      new RegExp(`--seed must be an integer .*'${seed.replace('.', '\\.')}'`),
    );
  }
});

test('a corrupt config.json is named with its path', async () => {
  const run = join(root, 'bad-run');
  await mkdir(run, { recursive: true });
  await writeFile(join(run, 'config.json'), '{"task": "transl');
  assertOneLine(
    frostChild('export', run, '--out', join(root, 'out')),
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
  const r = await frost(
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
    await frost('caption', root, join(root, 'missing.jpg')),
    new RegExp(`${join(root, 'missing.jpg')}: no such file$`),
  );
  assertOneLine(await frost('caption', root, root), new RegExp(`${root}: a directory, not an image file$`));
});

test('bin/frost.js loads only the command it runs, and every command when it runs none (help)', async () => {
  // The loaders' names are the commands they register, in order.
  const all = new Command();
  for (const register of commands) register(all);
  assert.deepEqual(
    commandLoaders.map(([name]) => name),
    all.commands.map((c) => c.name()),
  );
  for (const [name] of commandLoaders) {
    const one = new Command();
    for (const register of await commandsFor(['node', 'frost', name, '--help'])) register(one);
    assert.deepEqual(
      one.commands.map((c) => c.name()),
      [name],
    );
  }
  assert.equal((await commandsFor(['node', 'frost', '--help'])).length, commands.length);
  assert.equal((await commandsFor(['node', 'frost', 'nosuch'])).length, commands.length);
});
