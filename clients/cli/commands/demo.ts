import { Option, type Command } from 'commander';
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { loadModelDir } from '../../../core/runtime/load-node.ts';
import { MODEL_CARD_FILE } from '../../../core/runtime/model-card.ts';
import { exportRun } from '../../../export/export-run.ts';
import { headNames } from '../../../models/index.ts';
import { startServer } from '../../../serve/server.ts';
import { initBackend } from '../../../train/backend/select.ts';
import { fetchMulti30k } from '../../../train/data/fetch.ts';
import { LOCAL_MULTI30K_DIR, multi30kDir, REPO_ROOT } from '../../../train/data/paths.ts';
import { RUN_FILES } from '../../../train/run-config.ts';
import { resume, train } from '../../../train/trainer.ts';
import { webClient } from '../../web/build/web-client.ts';
import { demoModelName, demoRecipes, demoTrainArguments } from '../demo-recipe.ts';
import { newRunConfigFromArguments } from './train.ts';

interface DemoFlags {
  minutes: number;
  port: number;
  host: string;
  src: string;
  tgt: string;
  recipe: string;
  head?: string;
}

/** Sentences the demo translates once it is up (Multi30k-like, with names and capitals to show casing). */
const SAMPLES: Readonly<Record<string, readonly string[]>> = {
  de: [
    'Ein Boston Terrier läuft über saftig-grünes Gras.',
    'Zwei Männer in orangefarbenen Westen arbeiten an einer Straße in New York.',
    'Eine Frau mit Sonnenbrille fotografiert den Eiffelturm.',
  ],
  fr: ['Un homme en chemise bleue joue de la guitare à Paris.'],
  cs: ['Muž v modré košili hraje na kytaru.'],
  en: ['A Boston terrier is running on lush green grass.'],
};

/** Finds Multi30k (FROST_DATA, ../shared/data, ./data/multi30k) or downloads it; says what to do when neither works. */
async function findMulti30k(): Promise<string> {
  try {
    return multi30kDir();
  } catch {
    process.stderr.write('Multi30k not found locally; downloading it from its public source...\n');
    try {
      await fetchMulti30k({
        out: LOCAL_MULTI30K_DIR,
        download: true,
        log: (line) => process.stderr.write(`${line}\n`),
      });
      return LOCAL_MULTI30K_DIR;
    } catch (err) {
      throw new Error(
        `no Multi30k corpus: ${(err as Error).message}\n` +
          'Either set FROST_DATA to a folder holding multi30k/ (train.de.gz, train.en.gz, ...), ' +
          'or copy those files into data/multi30k with `frost data multi30k --from DIR --out data/multi30k`, then run `npm start` again.',
        { cause: err },
      );
    }
  }
}

/**
 * The main job: make sure a demo model exists (train it under a time budget, resuming an interrupted
 * run, and export it), then serve it.
 */
export function registerDemo(program: Command): void {
  const recipes = demoRecipes();
  program
    .command('demo')
    .description('train (time-capped), export and serve a Multi30k translation model; reuses it when it exists')
    .option('--minutes <m>', 'training budget in minutes', (v) => Number(v), 20)
    .option('--port <n>', 'HTTP port', (v) => Number(v), 8080)
    .option('--host <addr>', 'address to listen on', '127.0.0.1')
    .option('--src <lang>', 'source language', 'de')
    .option('--tgt <lang>', 'target language', 'en')
    .addOption(
      new Option(
        '--recipe <name>',
        `what to train (clients/cli/demo-recipes.json): ${Object.entries(recipes.recipes)
          .map(([name, r]) => `${name}: ${r.description}`)
          .join('; ')}`,
      )
        .choices(Object.keys(recipes.recipes))
        .default(recipes.default),
    )
    .addOption(new Option('--head <name>', "output head instead of the recipe's").choices(headNames()))
    .action(async (flags: DemoFlags) => {
      const recipe = recipes.recipes[flags.recipe]!;
      const name = demoModelName(flags.recipe, flags);
      const modelDir = join(REPO_ROOT, 'artifacts', name);
      if (!existsSync(join(modelDir, MODEL_CARD_FILE))) {
        const runDir = join(REPO_ROOT, 'runs', name);
        await initBackend();
        if (existsSync(join(runDir, RUN_FILES.config))) {
          process.stderr.write(`continuing the demo run in ${runDir}\n`);
          (await resume(runDir, { maxMinutes: flags.minutes })).model.params.dispose();
        } else {
          const args = demoTrainArguments(recipe, {
            dataDir: await findMulti30k(),
            src: flags.src,
            tgt: flags.tgt,
            minutes: flags.minutes,
            head: flags.head,
          });
          process.stderr.write(
            `training ${name} for up to ${flags.minutes} minutes (Ctrl-C is safe: npm start resumes)\n  frost train ${args.join(' ')}\n`,
          );
          (await train(await newRunConfigFromArguments(args, runDir), runDir)).model.params.dispose();
        }
        await exportRun(runDir, modelDir, { name, precision: recipe.precision });
      }
      // One decode thread per core, each with one onnxruntime thread: on 2 cores this served the demo model 2.0× the
      // requests/s at c=64 of one decode thread whose onnxruntime used both cores (docs/demo.md).
      const server = await startServer({
        modelsDir: modelDir,
        port: flags.port,
        host: flags.host,
        web: webClient(),
        workers: availableParallelism(),
        intraOpNumThreads: 1,
      });
      await printSamples(modelDir, SAMPLES[flags.src] ?? []);
      const body = JSON.stringify({ text: 'Ein Hund rennt über die Wiese.', beam: 5 });
      process.stdout.write(
        `\nfrost is serving ${name} at ${server.url}\ntry:\n  curl -s ${server.url}/v1/translate -H 'content-type: application/json' -d '${body}'\n`,
      );
      const stop = () => void server.close().then(() => process.exit(0));
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
}

/** Translates the sample sentences (beam 5) and prints them: what the model writes, as a reader sees it. */
async function printSamples(modelDir: string, samples: readonly string[]): Promise<void> {
  if (samples.length === 0) return;
  const runtime = await loadModelDir(modelDir);
  try {
    const out = await runtime.translate(samples, { beam: 5 });
    process.stdout.write('\nsample translations (beam 5):\n');
    samples.forEach((text, i) => process.stdout.write(`  ${text}\n  -> ${out[i]!.text}\n`));
  } finally {
    await runtime.release();
  }
}
