import { type Command, InvalidArgumentError } from 'commander';
import { fetchMulti30k, writeToyCorpus } from '../../../train/data/fetch.ts';

function nonNegativeInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n))
    throw new InvalidArgumentError('expected a non-negative integer');
  return n;
}

function seed(value: string): number {
  const n = nonNegativeInt(value);
  if (n > 0xffffffff) throw new InvalidArgumentError('expected an integer below 2^32');
  return n;
}

/**
 * `frost data multi30k` and `frost data toy`: put a corpus on disk in a layout that
 * `loadParallelCorpus` reads.
 */
export function registerData(program: Command): void {
  const data = program.command('data').description('Get training data: Multi30k, or a synthetic toy corpus.');

  data
    .command('multi30k')
    .description(
      'Copy Multi30k task 1 (train, val, test_2016_flickr; en de fr cs) from FROST_DATA or ../shared/data, ' +
        'or download it from github.com/multi30k/dataset; line counts are verified.',
    )
    .requiredOption('--out <dir>', 'directory to write the .gz files to')
    .option('--from <dir>', 'copy from this directory instead of FROST_DATA/multi30k or ../shared/data/multi30k')
    .option('--download', 'download even when a local copy exists')
    .action(async (opts: { out: string; from?: string; download?: boolean }) => {
      const result = await fetchMulti30k({
        out: opts.out,
        from: opts.from,
        download: opts.download,
        log: (line) => process.stdout.write(`${line}\n`),
      });
      process.stdout.write(`multi30k: ${result.files.length} files in ${result.out}\n`);
    });

  data
    .command('toy')
    .description('Write a deterministic synthetic parallel corpus (SVO to SOV with agreement) as plain text.')
    .requiredOption('--out <dir>', 'directory to write train.src, train.tgt, val.*, test.* and README.md to')
    .option('--seed <n>', 'seed of the language and the sentences', seed, 1)
    .option('--size <n>', 'training pairs', nonNegativeInt, 20000)
    .option('--lexicon-scale <x>', 'multiply the lexicon size (0.25: ~200 words, quick to learn)', (v) => Number(v), 1)
    .option('--val <n>', 'validation pairs', nonNegativeInt, 500)
    .option('--test <n>', 'test pairs', nonNegativeInt, 500)
    .action(
      async (opts: { out: string; seed: number; size: number; val: number; test: number; lexiconScale: number }) => {
        const written = await writeToyCorpus(opts.out, {
          seed: opts.seed,
          train: opts.size,
          val: opts.val,
          test: opts.test,
          lexiconScale: opts.lexiconScale,
        });
        process.stdout.write(
          `toy: ${opts.size}/${opts.val}/${opts.test} train/val/test pairs (seed ${opts.seed}), ${written.length} files in ${opts.out}\n`,
        );
      },
    );
}
