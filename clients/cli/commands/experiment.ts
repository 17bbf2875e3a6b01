import type { Command } from 'commander';
import { archChoices, type ExperimentDefinition, experimentNames, getExperiment } from '../../../experiments/index.ts';
import { executorNames, getExecutor } from '../../../experiments/executors/index.ts';
import { ExperimentInterrupted, liveChildren } from '../../../experiments/live-children.ts';
import { initBackend } from '../../../train/backend/select.ts';
import { exportsParityOption } from './parity-option.ts';
import { intOption } from './serve.ts';
import { registerExperimentSlurm } from './experiment-slurm.ts';

interface ExperimentFlags {
  data?: string;
  pairs?: string;
  heads?: string;
  budgetMinutes?: number;
  maxEpochs?: number;
  maxUpdates?: number;
  converge?: boolean;
  arch?: string;
  preset?: string;
  seed?: number;
  seeds?: number[];
  executor: string;
  sbatch?: string;
  out?: string;
  reportOut?: string;
  trainFlags?: string;
  jobs?: number;
  parityTolerance?: number;
  beam?: number;
  reportOnly?: boolean;
}

const list = (v: string) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
const positiveNumber = (v: string) => {
  const n = Number(v);
  if (!(n > 0)) throw new Error(`--budget-minutes must be a positive number, got '${v}'`);
  return n;
};

/** `--seeds 1,2,3`: distinct integers. */
const seedList = (v: string) => {
  const seeds = list(v).map(Number);
  if (seeds.length === 0 || !seeds.every((n) => Number.isInteger(n) && n >= 0))
    throw new Error(`--seeds takes a comma-separated list of integers, got '${v}'`);
  return seeds;
};

/**
 * The command line of this experiment's report alone (`--report-only`), for an executor that reports once the runs
 * have trained elsewhere: this one without the flags that choose where they train.
 */
function reportOnlyArgv(): string[] {
  const argv = process.argv.slice(2);
  const kept: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--executor' || a === '--sbatch') i++;
    else if (!a.startsWith('--executor=') && !a.startsWith('--sbatch=') && a !== '--report-only') kept.push(a);
  }
  return [...kept, '--report-only'];
}

/** This process's command line as `frost ...`, each argument quoted for a POSIX shell when it needs to be. */
function commandLine(): string {
  const quote = (a: string) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", "'\\''")}'`);
  return ['frost', ...process.argv.slice(2).map(quote)].join(' ');
}

/** One phrase per registered experiment, joined: the help texts name what the experiment registry holds. */
function eachExperiment(phrase: (e: ExperimentDefinition) => string, separator = ', '): string {
  return experimentNames()
    .map((n) => phrase(getExperiment(n)))
    .join(separator);
}

/**
 * `frost experiment NAME ...`: trains a grid of runs under equal budgets, exports and evaluates
 * them, and writes the report. Rerunning reuses finished runs and resumes unfinished ones. SIGINT and
 * SIGTERM are forwarded to the trainers, which save; it then exits 130/143 naming the runs it stopped.
 */
export function registerExperiment(program: Command): void {
  const command = program
    .command('experiment')
    .description(
      `train, export, evaluate and report a grid of runs (${experimentNames()
        .map((n) => `${n}: ${getExperiment(n).summary}`)
        .join('; ')})`,
    )
    .argument('<name>', `experiment: ${experimentNames().join(', ')}; or status, cell (below)`)
    .option(
      '--data <source>',
      `${eachExperiment((e) => `'${e.data}' (${e.name})`)}, 'toy' (a synthetic set under --out), or a data folder`,
    )
    .option('--budget-minutes <m>', 'training minutes per run, the same for every run', positiveNumber)
    .option(
      '--max-epochs <n>',
      'at most n epochs per run (with --budget-minutes: whichever comes first)',
      intOption('--max-epochs', 1),
    )
    .option(
      '--max-updates <n>',
      "at most n optimizer updates per run: equal work whatever the machine's load (runs trained under load end as they would alone)",
      intOption('--max-updates', 1),
    )
    .option(
      '--converge',
      "no time budget: train every run until its schedule's stopping rule (plateau: rate x0.8 after 8 epochs without a validation gain, stop after 20), or --max-epochs",
    )
    .option('--pairs <list>', "language pairs, e.g. 'de-en,en-de' (default: the data's)")
    .option('--heads <list>', "output heads, e.g. 'learned,tied,fixed-l2,hadamard' (default: the experiment's)")
    .option(
      '--arch <name>',
      `architecture of every run (default: the experiment's; ${eachExperiment(
        (e) => `${e.name}: ${e.defaults.arch} (${e.archList ? 'a list of' : 'one of'} ${archChoices(e).join(', ')})`,
        '; ',
      )})`,
    )
    .option('--preset <name>', "architecture preset (default: the experiment's)")
    .option('--seed <n>', 'seed of every run (default: 1)', intOption('--seed', 0))
    .option(
      '--seeds <list>',
      "a seed axis (mt-heads): every run once per seed, e.g. '1,2,3', in <out>/<src>-<tgt>-<head>-seed<n>/ when more than one",
      seedList,
    )
    .option(
      '--executor <name>',
      `where the runs train: ${executorNames()
        .map((n) => `${n} (${getExecutor(n).summary})`)
        .join('; ')}; both write the same run folders`,
      'local',
    )
    .option(
      '--sbatch <flags>',
      "sbatch flags for --executor slurm, e.g. '--partition=gpu --time=4:00:00 --cpus-per-task=4 --mem=8G --gres=gpu:1'",
    )
    .option(
      '--out <dir>',
      "grid folder: runs in <out>/<src>-<tgt>-<head>/, exports in <out>/artifacts/ (default: the experiment's)",
    )
    .option('--report-out <dir>', 'report folder (default: <out>/report)')
    .option(
      '--train-flags <flags>',
      "more 'frost train' flags for every new run, e.g. '--vocab bpe --joint-vocab --warmup-steps 500'",
    )
    .option(
      '--jobs <n>',
      "at most n runs training at once, queued across pairs (mt-heads) or architectures (caption-heads), for budgets of work only (--max-updates, --max-epochs, --converge); on 2 cores, 2 jobs make about twice the updates per hour of 5 side by side (default: each pair's or architecture's heads side by side)",
      intOption('--jobs', 1),
    )
    .option(
      '--report-only',
      "train nothing; write the report of the runs finished so far, for a grid that spans several sessions (commit it between them: on a fresh clone, a run whose folder is gone is taken from the report's row; mt-heads: report.json, caption-heads: results.json)",
    )
    .option(
      '--beam <k>',
      `beam width of the test translations or captions (default: the experiment's; ${eachExperiment((e) => `${e.name} ${e.defaults.beam}`)})`,
      intOption('--beam', 1),
    )
    .addOption(exportsParityOption())
    .action(async (name: string, flags: ExperimentFlags) => {
      const experiment = getExperiment(name);
      if (flags.data === undefined) throw new Error("required option '--data <source>' not specified");
      if (flags.seed !== undefined && flags.seeds !== undefined) throw new Error('give --seed or --seeds, not both');
      getExecutor(flags.executor);
      if (experiment.gridAxes !== true && (flags.seeds !== undefined || flags.executor !== 'local'))
        throw new Error(`${name} trains on the local executor with one seed: --seeds and --executor are for mt-heads`);
      if (flags.sbatch !== undefined && flags.executor !== 'slurm') throw new Error('--sbatch is for --executor slurm');
      if (
        flags.budgetMinutes === undefined &&
        flags.maxEpochs === undefined &&
        flags.maxUpdates === undefined &&
        flags.converge !== true
      )
        throw new Error(
          'give a budget: --budget-minutes M (equal training time), --max-updates N (equal work), --max-epochs N (an epoch cap), or --converge (until the stopping rule)',
        );
      if (flags.jobs !== undefined && flags.budgetMinutes !== undefined)
        throw new Error(
          '--jobs queues runs, and a run that waited would train on a quieter machine than its siblings within the same --budget-minutes: drop --jobs, or give --max-updates or --max-epochs',
        );
      if (flags.converge === true && flags.budgetMinutes !== undefined)
        throw new Error('--converge trains without a time budget: drop --budget-minutes, or --converge');
      await initBackend({ quiet: true });
      liveChildren.watch();
      const result = await experiment
        .run({
          data: flags.data,
          pairs: flags.pairs === undefined ? undefined : list(flags.pairs),
          heads: flags.heads === undefined ? undefined : list(flags.heads),
          budgetMinutes: flags.budgetMinutes,
          maxEpochs: flags.maxEpochs,
          maxUpdates: flags.maxUpdates,
          arch: flags.arch,
          preset: flags.preset,
          seed: flags.seed,
          ...(flags.seeds === undefined ? {} : { seeds: flags.seeds }),
          executor: flags.executor,
          ...(flags.sbatch === undefined ? {} : { sbatch: flags.sbatch.split(/\s+/).filter((s) => s !== '') }),
          ...(flags.executor === 'local' ? {} : { reportArgv: reportOnlyArgv() }),
          out: flags.out,
          reportOut: flags.reportOut,
          trainFlags:
            flags.trainFlags === undefined ? undefined : flags.trainFlags.split(/\s+/).filter((s) => s !== ''),
          beam: flags.beam,
          reportOnly: flags.reportOnly === true,
          parityTolerance: flags.parityTolerance,
          ...(flags.jobs === undefined ? {} : { jobs: flags.jobs }),
        })
        .catch((err: unknown) => {
          if (!(err instanceof ExperimentInterrupted)) throw err;
          throw new ExperimentInterrupted(
            err.signal,
            `${err.message}\nrerun \`${commandLine()}\` to resume the stopped runs and train the rest (finished runs are reused)`,
          );
        })
        .finally(() => liveChildren.unwatch());
      process.stdout.write(`${result.summary}\n`);
    });
  registerExperimentSlurm(command);
}
