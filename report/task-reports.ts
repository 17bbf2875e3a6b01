import type { TaskName } from '../train/run-config.ts';

/** Which report a task's runs go into, and what its messages call such a run. */
export interface TaskReport {
  /** `frost report` writes one kind at a time: a BLEU report (collect.ts) or a perplexity report (collect-lm.ts). */
  kind: 'bleu' | 'perplexity';
  /** 'a language-model run' */
  what: string;
  /** The collector that reports such runs, for messages. */
  collector: string;
}

/** The report side of each training task. */
const TASK_REPORTS: Readonly<Record<TaskName, TaskReport>> = {
  translation: { kind: 'bleu', what: 'a translation run', collector: "collectReport's (report/collect.ts)" },
  caption: { kind: 'bleu', what: 'a caption run', collector: "collectReport's (report/collect.ts)" },
  lm: { kind: 'perplexity', what: 'a language-model run', collector: "collectLmReport's (report/collect-lm.ts)" },
};

export function taskReport(task: TaskName): TaskReport {
  return TASK_REPORTS[task];
}
