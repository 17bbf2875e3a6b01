// Importing an executor file registers it: local first, the default.
import './local.ts';
import './slurm.ts';

export { executorNames, getExecutor, type GridExecutor } from './executor.ts';
