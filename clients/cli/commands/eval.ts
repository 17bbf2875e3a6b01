import type { Command } from 'commander';
import { resolve } from 'node:path';
import { initBackend } from '../../../train/backend/select.ts';
import { evaluateLmRun, type LmEvaluation } from '../../../train/lm/lm-eval-run.ts';
import { LM_EVAL_CONTEXTS, type LmEvalContext } from '../../../train/lm/lm-evaluate.ts';
import { intOption } from './serve.ts';

interface EvalFlags {
  checkpoint: 'best' | 'last';
  bins: number;
  context: LmEvalContext;
  json?: boolean;
}

/** One row per run: head, valid and test perplexity, then test perplexity by frequency bin. */
export function formatLmEvaluations(results: readonly LmEvaluation[]): string {
  const bins = results[0]?.test.bins ?? [];
  const header = ['run', 'head', 'valid ppl', 'test ppl', ...bins.map((b) => `bin ${b.bin}`)];
  const rows = results.map((r) => [
    r.run,
    r.head,
    r.valid.perplexity.toFixed(2),
    r.test.perplexity.toFixed(2),
    ...r.test.bins.map((b) => (b.tokens > 0 ? b.perplexity.toFixed(2) : '-')),
  ]);
  const binLine = bins.map((b) => `bin ${b.bin}: ${b.types} types, training counts ${b.minCount}-${b.maxCount}`);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join('  ');
  return [
    line(header),
    ...rows.map(line),
    '',
    results[0]?.context === 'line'
      ? 'each line scored from a fresh state (--context line)'
      : 'state carried through each evaluation stream (--context stream)',
    'test perplexity by training frequency (bin 1 = most frequent):',
    ...binLine,
  ].join('\n');
}

/**
 * `frost eval RUN...`: perplexity of language-model runs on their valid and test splits, overall
 * and by 5 bins of training-word frequency; several runs (one per head) print as one table.
 */
export function registerEval(program: Command): void {
  program
    .command('eval')
    .description('perplexity of language-model runs on valid and test, overall and by word-frequency bin')
    .argument('<runs...>', 'run folders written by `frost train --task lm`')
    .option('--checkpoint <which>', 'best or last', 'best')
    .option('--bins <n>', 'word-frequency bins', intOption('--bins', 1, 100), 5)
    .option(
      '--context <how>',
      'stream: the state carried through each evaluation stream; line: each line from a fresh state',
      'stream',
    )
    .option('--json', 'print the evaluations as JSON')
    .action(async (runs: string[], flags: EvalFlags) => {
      if (flags.checkpoint !== 'best' && flags.checkpoint !== 'last')
        throw new Error(`--checkpoint expects best or last, got '${String(flags.checkpoint)}'`);
      if (!(LM_EVAL_CONTEXTS as readonly string[]).includes(flags.context))
        throw new Error(`--context expects ${LM_EVAL_CONTEXTS.join(' or ')}, got '${String(flags.context)}'`);
      await initBackend({ quiet: true });
      const results: LmEvaluation[] = [];
      for (const run of runs)
        results.push(
          await evaluateLmRun(resolve(run), { which: flags.checkpoint, bins: flags.bins, context: flags.context }),
        );
      process.stdout.write(`${flags.json ? JSON.stringify(results, null, 2) : formatLmEvaluations(results)}\n`);
    });
}
