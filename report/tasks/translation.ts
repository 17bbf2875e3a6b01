import { bleuReport } from '../bleu-report.ts';
import { registerTaskReport } from '../task-reports.ts';

registerTaskReport({ task: 'translation', what: 'translation', report: bleuReport });
