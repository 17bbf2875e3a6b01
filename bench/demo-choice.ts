/**
 * Which recipe `npm start` should train: each demo recipe (clients/cli/demo-recipes.json) trained for the demo's
 * budget on the whole machine, one after another, then judged on Multi30k's validation set, as the demo would
 * serve it (beam 5, the search's defaults). The winner is chosen on validation only; `--test` then scores test2016
 * for the winner alone, the figure the README quotes, so the test set never picks between recipes.
 *
 *   npm run bench:demo                                        # every recipe but the word model, 20 minutes each
 *   npm run bench:demo -- --recipes rnn-attn-short,transformer-tied --minutes 20 --test
 *   npm run bench:demo -- --report-only                       # the table of the runs trained so far
 *
 * Each run is `frost train` with exactly the arguments `frost demo` would give (demoTrainArguments), in its own
 * process with frost's default threads, into `<out>/<recipe>`; an interrupted bench resumes each run from its last
 * checkpoint and reuses finished ones, so the bench can be stopped (Ctrl-C saves) and started again. Training time
 * depends on what else the machine does: run it with nothing else running, and read `updates` beside the BLEU.
 */
import { existsSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { cpus, loadavg } from 'node:os';
import { corpusBleu } from '../core/metrics/bleu.ts';
import { MODEL_CARD_FILE } from '../core/runtime/model-card.ts';
import { exportRun } from '../export/export-run.ts';
import { demoRecipes, demoTrainArguments } from '../clients/cli/demo-recipe.ts';
import { liveChildren } from '../experiments/live-children.ts';
import { runFrost } from '../experiments/spawn-frost.ts';
import { translateSources } from '../report/collect-test.ts';
import { ensureExport } from '../report/find-export.ts';
import { readMetrics, runStatus } from '../report/run-status.ts';
import { initBackend } from '../train/backend/select.ts';
import { readMulti30k, type Multi30kLang } from '../train/data/multi30k.ts';
import { multi30kDir, REPO_ROOT } from '../train/data/paths.ts';
import { readCheckpointInfo } from '../train/run-folder.ts';

const USAGE = `npm run bench:demo [-- --recipes A,B] [--minutes 20] [--out DIR] [--sentences N] [--test] [--report-only]`;

const { values: args } = parseArgs({
  options: {
    /** Recipes, comma-separated; default: every recipe of demo-recipes.json except the word model. */
    recipes: { type: 'string' },
    minutes: { type: 'string', default: '20' },
    src: { type: 'string', default: 'de' },
    tgt: { type: 'string', default: 'en' },
    out: { type: 'string', default: join(REPO_ROOT, 'runs', 'demo-choice') },
    beam: { type: 'string', default: '5' },
    /** Validation (and test) sentences decoded; default: all (1,014 and 1,000). */
    sentences: { type: 'string' },
    test: { type: 'boolean', default: false },
    'report-only': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (args.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}

/** A recipe of word vocabularies (`--vocab word`): it writes `<unk>`, so the demo's choice leaves it out. */
function isWordRecipe(train: readonly string[]): boolean {
  const at = train.lastIndexOf('--vocab');
  return at >= 0 && train[at + 1] === 'word';
}

const all = demoRecipes();
const names = args.recipes
  ? args.recipes.split(',').map((s) => s.trim())
  : Object.keys(all.recipes).filter((n) => !isWordRecipe(all.recipes[n]!.train));
for (const name of names)
  if (!all.recipes[name])
    throw new Error(`--recipes: no recipe '${name}' (have ${Object.keys(all.recipes).join(', ')})`);
const minutes = Number(args.minutes);
if (!(minutes > 0)) throw new Error(`--minutes must be a positive number, got '${args.minutes}'`);
const beam = Number(args.beam);
const sentences = args.sentences === undefined ? undefined : Number(args.sentences);
const outDir = resolve(args.out);
const dataDir = multi30kDir();
const src = args.src as Multi30kLang;
const tgt = args.tgt as Multi30kLang;

/** One recipe's run, as the table shows it. */
interface Row {
  recipe: string;
  updates: number;
  epochs: number;
  trainedMinutes: number;
  tokensPerSecond: number;
  greedyValBleu: number;
  valBleu: number;
  valBleuLc: number;
  /** The precision the demo serves (the recipe's), and that export's validation BLEU when it is not fp32. */
  precision: string;
  servedValBleu: number;
  testBleu?: number;
  testBleuLc?: number;
}

async function bleuOf(modelDir: string, split: 'val' | 'test2016'): Promise<{ cased: number; lc: number }> {
  const pairs = (await readMulti30k({ dir: dataDir, split, src, tgt })).slice(0, sentences);
  const hyps = (
    await translateSources(
      modelDir,
      pairs.map((p) => p.src),
      beam,
    )
  ).texts;
  const refs = [pairs.map((p) => p.tgt)];
  return { cased: corpusBleu(hyps, refs).score, lc: corpusBleu(hyps, refs, { lowercase: true }).score };
}

/** Trains (or resumes) a recipe's run to the budget, unless it is already there. */
async function trainRecipe(name: string): Promise<void> {
  const runDir = join(outDir, name);
  const status = await runStatus(runDir, minutes);
  if (status.kind === 'finished') {
    process.stderr.write(`${name}: finished (${status.reason}), reused\n`);
    return;
  }
  const argv =
    status.kind === 'missing'
      ? ['train', ...demoTrainArguments(all.recipes[name]!, { dataDir, src, tgt, minutes }), '--out', runDir]
      : ['train', '--resume', runDir, '--max-minutes', String(minutes)];
  process.stderr.write(`${name}: frost ${argv.join(' ')}\n`);
  await runFrost(argv, {}, join(outDir, 'logs', `${name}.log`));
}

/** The export the demo would serve: the fp32 one, or the recipe's precision exported beside it. */
async function servedModel(name: string): Promise<string> {
  const runDir = join(outDir, name);
  const { precision } = all.recipes[name]!;
  if (precision === 'fp32') return (await ensureExport(runDir)).modelDir;
  const dir = join(runDir, `export-${precision}`);
  if (!existsSync(join(dir, MODEL_CARD_FILE)))
    await exportRun(runDir, dir, { name: `${name}-${precision}`, precision, quiet: true });
  return dir;
}

async function rowOf(name: string): Promise<Row | null> {
  const runDir = join(outDir, name);
  // null when the run has no checkpoint yet; a corrupt one is refused with its path.
  const last = await readCheckpointInfo(runDir, 'last');
  if (!last) return null;
  const exp = await ensureExport(runDir, { log: (l) => process.stderr.write(`${l}\n`) });
  const metrics = await readMetrics(runDir);
  const tokens = metrics.reduce((sum, m) => sum + Number((m as { tokens?: number }).tokens ?? 0), 0);
  const trainedMinutes = Number(last.state.elapsedMs ?? 0) / 60_000;
  process.stderr.write(`${name}: validation, beam ${beam}\n`);
  const val = await bleuOf(exp.modelDir, 'val');
  return {
    recipe: name,
    updates: last.step,
    epochs: last.epoch,
    trainedMinutes,
    tokensPerSecond: trainedMinutes > 0 ? tokens / (trainedMinutes * 60) : NaN,
    greedyValBleu: Number(last.state.bestBleu ?? NaN),
    valBleu: val.cased,
    valBleuLc: val.lc,
    precision: all.recipes[name]!.precision,
    servedValBleu:
      all.recipes[name]!.precision === 'fp32' ? val.cased : (await bleuOf(await servedModel(name), 'val')).cased,
  };
}

async function main(): Promise<void> {
  process.stderr.write(
    `demo recipes ${names.join(', ')}: ${minutes} min each, ${cpus().length} cores, load average ${loadavg()[0]!.toFixed(2)}\n`,
  );
  if (!args['report-only']) {
    // A signal reaches the training child, which saves; the bench then stops with it.
    liveChildren.watch();
    try {
      for (const name of names) await trainRecipe(name);
    } finally {
      liveChildren.unwatch();
    }
  }
  await initBackend({ quiet: true });
  const rows: Row[] = [];
  for (const name of names) {
    const row = await rowOf(name);
    if (row) rows.push(row);
  }
  if (rows.length === 0) throw new Error(`no trained run under ${outDir}`);
  // Judged as served: a recipe exported int8-compute is judged by that export.
  const best = rows.reduce((a, b) => (b.servedValBleu > a.servedValBleu ? b : a));
  if (args.test) {
    const t = await bleuOf(await servedModel(best.recipe), 'test2016');
    best.testBleu = t.cased;
    best.testBleuLc = t.lc;
  }
  const f = (x: number | undefined, d = 2) => (x === undefined || Number.isNaN(x) ? '–' : x.toFixed(d));
  process.stdout.write(
    `\n${basename(outDir)}: Multi30k ${src}→${tgt}, ${minutes} minutes each, validation beam ${beam} (cased, 13a)\n\n` +
      '| recipe | updates | epochs | minutes | tokens/s | val BLEU greedy (best epoch) | val BLEU beam | lower-cased | served precision: val BLEU | test2016 cased (served) |\n' +
      '|---|---:|---:|---:|---:|---:|---:|---:|---|---:|\n' +
      rows
        .map(
          (r) =>
            `| ${r.recipe === best.recipe ? `**${r.recipe}**` : r.recipe} | ${r.updates} | ${r.epochs} | ${f(r.trainedMinutes, 1)} | ${f(r.tokensPerSecond, 0)} | ${f(r.greedyValBleu)} | ${f(r.valBleu)} | ${f(r.valBleuLc)} | ${r.precision}: ${f(r.servedValBleu)} | ${f(r.testBleu)} |`,
        )
        .join('\n') +
      `\n\nbest on validation: ${best.recipe}` +
      (best.recipe === all.default ? ' (the demo default)' : ` (the demo default is ${all.default})`) +
      '\n',
  );
}

await main();
