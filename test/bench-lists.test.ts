/**
 * Benchmarks take their architectures from models/archs' registry, so a new architecture needs no edit under bench/
 * or in package.json: every bench with an `--arch`/`--archs` option names, in its `--help` (run as a user runs it, as
 * the entry module of a `node --import tsx` child process, one child for all of them: bench-help.ts), exactly the
 * registered architectures of one input kind; together they name every registered architecture; and no `npm run`
 * script is named after an architecture.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { archsReading } from '../bench/archs.ts';
import { archNames } from '../models/index.ts';
import { REPO_ROOT } from '../train/data/paths.ts';
import { type BenchHelp, benchHelps } from './helpers/bench-help.ts';

/** The bench files (not their shared modules) whose parseArgs options include `arch` or `archs`. */
function benchesTakingArch(): { file: string; flag: string }[] {
  return readdirSync(join(REPO_ROOT, 'bench'))
    .filter((name) => name.endsWith('.ts'))
    .flatMap((name) => {
      const m = /^\s+(archs?): \{ type: 'string'/m.exec(readFileSync(join(REPO_ROOT, 'bench', name), 'utf8'));
      return m ? [{ file: `bench/${name}`, flag: `--${m[1]}` }] : [];
    });
}

/** The architectures a bench's `--help` (`r`) lists on its `--arch takes …: a, b` line. */
function helpArchs(file: string, flag: string, r: BenchHelp): string[] {
  assert.equal(r.status, 0, `${file} --help failed: ${r.stderr}`);
  const line = r.stdout.split('\n').find((l) => l.startsWith(`${flag} takes `));
  assert.ok(line, `${file} --help names no '${flag} takes …' line:\n${r.stdout}`);
  return line
    .slice(line.indexOf(':') + 1)
    .split(',')
    .map((a) => a.trim());
}

describe('bench lists come from the architecture registry', () => {
  const benches = benchesTakingArch();

  test('the benches with --arch include bench:train, bench:step and bench:caption', () => {
    const files = benches.map((b) => b.file);
    for (const file of ['bench/train-speed.ts', 'bench/step-cost.ts', 'bench/caption-heads.ts'])
      assert.ok(files.includes(file), `${file} not found among ${files.join(', ')}`);
  });

  test("each one's --help lists one input kind's registered architectures, and together they list all", async () => {
    const kinds = { tokens: archsReading('tokens'), image: archsReading('image') };
    const named = new Set<string>();
    const helps = await benchHelps(benches.map((b) => b.file));
    for (const { file, flag } of benches) {
      const listed = helpArchs(file, flag, helps[file]!);
      const kind = Object.entries(kinds).find(([, archs]) => archs.join() === listed.join());
      assert.ok(kind, `${file} --help lists ${listed.join(', ')}, not the registry's architectures of one kind`);
      for (const arch of listed) named.add(arch);
    }
    assert.deepEqual([...named].sort(), archNames({ family: 'seq2seq' }).sort());
  });

  test('no npm script is named after an architecture (one script takes --arch instead)', () => {
    const scripts = Object.keys(
      (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
        .scripts,
    );
    for (const arch of archNames())
      assert.deepEqual(
        scripts.filter((s) => s.includes(arch)),
        [],
        `npm scripts named after '${arch}'`,
      );
  });
});
