// Importing a task's export file registers it; this list is the only place that names them all.
import './translation-parts.ts';
import './caption-parts.ts';
import './lm-parts.ts';

export { taskExport } from './task-parts.ts';
