// Importing a task's report file registers it; this list is the only place that names them all.
import './translation.ts';
import './caption.ts';
import './lm.ts';

export { taskReport } from '../task-reports.ts';
export type { ReportKind, ReportOptions, TaskReport } from '../task-reports.ts';
