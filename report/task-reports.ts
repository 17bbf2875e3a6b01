import { Registry } from '../core/registry.ts';
import type { TaskName } from '../train/run-config.ts';
import type { LayoutInserts } from './layout.ts';
import type { WrittenReport } from './write-report.ts';

/** What `frost report` hands every kind of report; each reads the fields that apply to it. */
export interface ReportOptions {
  title: string;
  /** BLEU report: beam width of the test translations and the latency runs. @default DEFAULT_TEST_BEAM (5) */
  beam?: number;
  /** BLEU report: a word is rare below this many training occurrences. @default RARE_WORD_THRESHOLD (100) */
  rareThreshold?: number;
  /** Perplexity report: word-frequency bins, as `frost eval --bins`. @default 5 */
  bins?: number;
  /** BLEU report: the parity bar of the exports it makes (export/parity.ts). @default 1e-4 */
  parityTolerance?: number;
  log?: (line: string) => void;
}

/**
 * A kind of report: how runs are collected into its data, and how that data is laid out and written. One report
 * holds one kind (a perplexity table and a BLEU table have no column in common).
 */
export interface ReportKind<R = unknown> {
  /** 'bleu', 'perplexity': for messages. */
  name: string;
  /** The runs' data, in the order given (report.json's content). */
  collect(runDirs: string[], opts: ReportOptions): Promise<R>;
  /** Writes report.json, report.md and report.html; `inserts` are the caller's sections (the papers' claims). */
  write(report: R, dir: string, inserts?: LayoutInserts): Promise<WrittenReport>;
}

/** The report side of a training task: which report its runs go into. */
export interface TaskReport {
  task: TaskName;
  /** What messages call its runs: 'language-model' (runs). */
  what: string;
  report: ReportKind;
}

const taskReports = new Registry<TaskReport>('task report');

/** Adds the report side of a training task; each task's file under tasks/ calls this once (tasks/index.ts). */
export function registerTaskReport(report: TaskReport): void {
  taskReports.register(report.task, report);
}

/** The report of `task`'s runs; a task with none registered is refused, naming those that have one. */
export function taskReport(task: TaskName): TaskReport {
  return taskReports.get(task);
}
