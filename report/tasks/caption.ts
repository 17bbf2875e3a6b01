import { bleuReport } from '../bleu-report.ts';
import { registerTaskReport } from '../task-reports.ts';

registerTaskReport({ task: 'caption', what: 'caption', report: bleuReport });
