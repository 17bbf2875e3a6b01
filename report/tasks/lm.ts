import { perplexityReport } from '../perplexity-report.ts';
import { registerTaskReport } from '../task-reports.ts';

registerTaskReport({ task: 'lm', what: 'language-model', report: perplexityReport });
