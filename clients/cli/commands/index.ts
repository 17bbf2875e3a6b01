import type { Command } from 'commander';
import { registerBleu } from './bleu.ts';
import { registerCaption } from './caption.ts';
import { registerConvert } from './convert.ts';
import { registerData } from './data.ts';
import { registerDemo } from './demo.ts';
import { registerEval } from './eval.ts';
import { registerExperiment } from './experiment.ts';
import { registerExport } from './export.ts';
import { registerInspect } from './inspect.ts';
import { registerReport } from './report.ts';
import { registerScore } from './score.ts';
import { registerServe } from './serve.ts';
import { registerTrain } from './train.ts';
import { registerTranslate } from './translate.ts';

/** Each command lives in its own file and adds itself to the program. */
export type RegisterCommand = (program: Command) => void;

export const commands: RegisterCommand[] = [
  registerDemo,
  registerData,
  registerTrain,
  registerEval,
  registerExport,
  registerInspect,
  registerTranslate,
  registerCaption,
  registerServe,
  registerConvert,
  registerBleu,
  registerScore,
  registerReport,
  registerExperiment,
];
