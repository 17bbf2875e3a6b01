import { Registry } from '../core/registry.ts';
import { archNames, getArch, type InputKind } from '../models/index.ts';
import type { WrittenReport } from '../report/write-report.ts';

/**
 * Experiments `frost experiment NAME` can run: each trains a grid of runs, exports and evaluates
 * them, and writes a report. Each experiment file registers itself; a duplicate name throws.
 */
export interface ExperimentOptions {
  /** 'multi30k', 'toy' (a synthetic corpus written under `out`), or a corpus folder. */
  data: string;
  /** Language pairs as 'src-tgt'. @default the data source's pairs */
  pairs?: string[];
  /** Output heads. @default the experiment's */
  heads?: string[];
  /**
   * Training minutes per run (validation included), equal for every run. Without it (and without `maxEpochs`)
   * every run trains until its schedule's stopping rule. @default no time budget
   */
  budgetMinutes?: number;
  /** At most this many epochs per run (with `budgetMinutes`: whichever comes first). @default no cap */
  maxEpochs?: number;
  /**
   * At most this many optimizer updates per run: equal work for every run whatever else the machine does, so
   * the grid can train under load and still compare like with like. @default no cap
   */
  maxUpdates?: number;
  /**
   * Architecture of every run (the paper's Multi30k tables are on rnn-attn, its WMT result on convs2s). @default the
   * experiment's
   */
  arch?: string;
  /** @default the experiment's */
  preset?: string;
  /** The seed of every run, in a grid of one seed. @default 1 */
  seed?: number;
  /**
   * The seed axis (mt-heads): every run once per seed, in `<out>/<src>-<tgt>-<head>-seed<seed>/` when there is more
   * than one. @default [seed]
   */
  seeds?: number[];
  /** Where the runs train (experiments/executors/): 'local' or 'slurm'. @default 'local' */
  executor?: string;
  /** sbatch flags for both of the grid's Slurm jobs (partition, time, CPUs, memory, GPUs). @default none */
  sbatch?: string[];
  /**
   * The `frost` arguments that write this grid's report from its finished runs (`frost experiment NAME ...
   * --report-only`): the job an executor that returns before the runs finish (slurm) submits to run after them.
   */
  reportArgv?: string[];
  /**
   * Grid folder: runs in `<out>/<src>-<tgt>-<head>/`, exports in `<out>/artifacts/<same>/`. @default the experiment's
   */
  out?: string;
  /** @default `<out>/report` */
  reportOut?: string;
  /**
   * More `frost train` flags for every new run (vocabulary, recipe), e.g. `['--vocab', 'bpe', '--joint-vocab']`.
   * Resumed runs keep the flags they were started with. @default none
   */
  trainFlags?: string[];
  /**
   * At most this many runs train at once (mt-heads), for budgets of work (epochs, updates, the stopping rule):
   * on 2 cores two trainers make about twice the updates per hour of five sharing them. @default every head
   * of a pair side by side
   */
  jobs?: number;
  /**
   * Train nothing; report the runs finished so far (folders, and rows of the report already at `reportOut`),
   * so a grid that needs several sessions can commit its report between them. @default false
   */
  reportOnly?: boolean;
  /** Beam width of the test translations. @default 5 */
  beam?: number;
  /** The parity bar of the exports the experiment makes (export/parity.ts); @default 1e-4 */
  parityTolerance?: number;
  /** @default a line on stderr */
  log?: (line: string) => void;
}

export interface ExperimentResult {
  runDirs: string[];
  /** The report file to open (printed by `frost experiment`). */
  summary: string;
  /** mt-heads: the report's files (none when the runs were submitted to a cluster rather than trained). */
  report?: WrittenReport;
}

export interface ExperimentDefinition {
  name: string;
  /** One line for `frost experiment --help`. */
  summary: string;
  /** What its architectures encode: each registered architecture that does is a choice of `--arch` (archChoices). */
  inputKind: InputKind;
  /** Whether `--arch` takes a comma-separated list (one grid per architecture) rather than one architecture. */
  archList: boolean;
  /** The `--data` source of the paper's data for it, for `frost experiment --help` ('multi30k'). */
  data: string;
  defaults: { arch: string; heads: string[]; preset: string; out: string; beam: number };
  /** Whether it takes a seed axis (`seeds`) and an executor other than the local one. @default false */
  gridAxes?: boolean;
  run(options: ExperimentOptions): Promise<ExperimentResult>;
}

/** The registered architectures an experiment may train: those that encode its input kind, in registration order. */
export function archChoices(def: Pick<ExperimentDefinition, 'inputKind'>): string[] {
  return archNames({ family: 'seq2seq' }).filter((a) => getArch(a).inputKind === def.inputKind);
}

/**
 * Refuses an architecture an experiment cannot train: unknown ones with the registry's list, ones of another
 * task naming the experiment's choices.
 */
export function checkArch(def: Pick<ExperimentDefinition, 'name' | 'inputKind'>, arch: string): void {
  getArch(arch);
  const choices = archChoices(def);
  if (!choices.includes(arch))
    throw new Error(`'${arch}' is not ${WHAT[def.inputKind]} architecture; ${def.name} trains ${choices.join(', ')}`);
}

const WHAT: Record<InputKind, string> = { tokens: 'a translation', image: 'a captioning' };

const experiments = new Registry<ExperimentDefinition>('experiment');

export function registerExperiment(def: ExperimentDefinition): void {
  experiments.register(def.name, def);
}

export function experimentNames(): string[] {
  return experiments.names();
}

export function getExperiment(name: string): ExperimentDefinition {
  return experiments.get(name);
}
