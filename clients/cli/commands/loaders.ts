import type { Command } from 'commander';

/** Each command lives in its own file and adds itself to the program. */
export type RegisterCommand = (program: Command) => void;

/**
 * Each command's file, loaded on demand: `frost serve` loads serve's alone (no tfjs, no trainer), `frost train`
 * no server, and `frost --help` all of them, in this order. index.ts loads them all for the in-process test helper.
 */
export const commandLoaders: ReadonlyArray<readonly [string, () => Promise<RegisterCommand>]> = [
  ['demo', async () => (await import('./demo.ts')).registerDemo],
  ['data', async () => (await import('./data.ts')).registerData],
  ['train', async () => (await import('./train.ts')).registerTrain],
  ['import', async () => (await import('./import.ts')).registerImport],
  ['eval', async () => (await import('./eval.ts')).registerEval],
  ['export', async () => (await import('./export.ts')).registerExport],
  ['inspect', async () => (await import('./inspect.ts')).registerInspect],
  ['translate', async () => (await import('./translate.ts')).registerTranslate],
  ['caption', async () => (await import('./caption.ts')).registerCaption],
  ['serve', async () => (await import('./serve.ts')).registerServe],
  ['convert', async () => (await import('./convert.ts')).registerConvert],
  ['bleu', async () => (await import('./bleu.ts')).registerBleu],
  ['score', async () => (await import('./score.ts')).registerScore],
  ['report', async () => (await import('./report.ts')).registerReport],
  ['experiment', async () => (await import('./experiment.ts')).registerExperiment],
];

/** The commands to register for `argv` (`process.argv`): the one it names, or every one (help, an unknown name). */
export async function commandsFor(argv: readonly string[]): Promise<RegisterCommand[]> {
  const named = commandLoaders.find(([name]) => name === argv[2]);
  return named ? [await named[1]()] : Promise.all(commandLoaders.map(([, load]) => load()));
}
