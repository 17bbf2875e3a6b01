// Importing an experiment file registers it.
import './mt-heads.ts';
import './caption-heads.ts';

export {
  archChoices,
  type ExperimentDefinition,
  experimentNames,
  getExperiment,
  type ExperimentOptions,
  type ExperimentResult,
} from './registry.ts';
