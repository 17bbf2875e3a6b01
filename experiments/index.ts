// Importing an experiment file registers it.
import './mt-heads.ts';
import './caption-heads.ts';

export { experimentNames, getExperiment, type ExperimentOptions, type ExperimentResult } from './registry.ts';
