/**
 * `npm run bench`: every benchmark in turn, each in its own process so one's memory or threads
 * never skew the next. Extra arguments go to mt-heads (e.g. `npm run bench -- --minutes 10`).
 * Training speed runs for every translation architecture of the registry (bench/archs.ts): the
 * default one with all its heads, the others with two.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { archsReading, DEFAULT_BENCH_ARCH } from './archs.ts';

const here = import.meta.dirname;
const trainSpeed = archsReading('tokens').map((arch) => ({
  file: 'train-speed.ts',
  args:
    arch === DEFAULT_BENCH_ARCH
      ? []
      : ['--arch', arch, '--heads', 'learned,fixed-l2', '--out', `reports/train-speed-${arch}`],
}));
const benches: { file: string; args: string[] }[] = [
  { file: 'wasm-kernels.ts', args: [] },
  { file: 'gemm-providers.ts', args: [] },
  { file: 'image-preprocess.ts', args: [] },
  { file: 'export-sizes.ts', args: [] },
  { file: 'hadamard-head.ts', args: [] },
  { file: 'frozen-heads.ts', args: [] },
  ...trainSpeed,
  { file: 'step-cost.ts', args: [] },
  { file: 'compact-output.ts', args: [] },
  { file: 'moving-average.ts', args: [] },
  { file: 'serve-load.ts', args: [] },
  { file: 'mt-heads.ts', args: process.argv.slice(2) },
  { file: 'web-load.ts', args: ['--models', 'runs/bench-mt-heads/artifacts'] },
  { file: 'caption-heads.ts', args: ['--minutes', '20'] },
];

const failed: string[] = [];
for (const { file, args } of benches) {
  process.stderr.write(`\n=== bench/${file} ${args.join(' ')}\n`);
  const result = spawnSync(process.execPath, ['--import', 'tsx', join(here, file), ...args], { stdio: 'inherit' });
  if (result.status !== 0) failed.push(file);
}
if (failed.length) {
  process.stderr.write(`\nfailed: ${failed.join(', ')}\n`);
  process.exit(1);
}
