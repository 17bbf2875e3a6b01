import { type Command, Option } from 'commander';
import {
  bleuSignature,
  bleuTokenizers,
  corpusBleu,
  sentenceBleu,
  type BleuScore,
  type BleuTokenizerName,
} from '../../../core/metrics/bleu.ts';
import { evaluateCaptions, type CaptionScores } from '../../../core/metrics/caption-eval.ts';
import { chrfSignature, corpusChrf, sentenceChrf, type ChrfScore } from '../../../core/metrics/chrf.ts';
import { getTokenizer } from '../../../core/text/tokenize.ts';
import {
  looksLikeJson,
  parseCaptionHypotheses,
  parseCaptionReferences,
  readInput,
  splitLines,
} from './score-inputs.ts';

type Task = 'translation' | 'caption';

interface ScoreFlags {
  task?: Task;
  split: string;
  tokenize: BleuTokenizerName;
  lowercase?: boolean;
  sentence?: boolean;
  json?: boolean;
}

/**
 * `frost score HYP REF...`: every metric that applies, from files. Translation: sacreBLEU's BLEU,
 * chrF and chrF++ with their signatures. Captions: coco-caption's BLEU-1..4, ROUGE-L and CIDEr-D
 * from raw captions, and vocabulary usage. `frost bleu` stays as it was.
 */
export function registerScore(program: Command): void {
  program
    .command('score')
    .description(
      'score hypotheses against references with every metric that applies (BLEU, chrF, chrF++; caption metrics)',
    )
    .argument('<hyp>', 'hypotheses: one per line (- for stdin, .gz is fine), or COCO caption results JSON')
    .argument(
      '<ref...>',
      'references: text files, one per line (several files = several references), or one caption JSON ' +
        '(Karpathy dataset_*.json or COCO captions_*.json)',
    )
    .addOption(
      new Option('--task <task>', 'what is scored (default: caption when a file is JSON, else translation)').choices([
        'translation',
        'caption',
      ]),
    )
    .option('--split <name>', 'the split of a Karpathy JSON to score', 'test')
    .addOption(
      new Option('-t, --tokenize <name>', 'BLEU tokenizer (translation)')
        .choices(Object.keys(bleuTokenizers))
        .default('13a'),
    )
    .option('-l, --lowercase', 'case-insensitive BLEU and chrF (translation)')
    .option(
      '--sentence',
      'translation: BLEU, chrF and chrF++ of each line (sentence BLEU: effective order, exp smoothing)',
    )
    .option('--json', 'print one JSON object')
    .addHelpText(
      'after',
      '\nExamples:\n  frost score system.de newstest.de\n  frost score --json captions.txt dataset_flickr8k.json' +
        '\n  frost score results.json captions_val2014.json\n  frost score --task caption hyps.txt ref1.txt ref2.txt',
    )
    .action(async (hypFile: string, refFiles: string[], flags: ScoreFlags) => {
      const [hypText, ...refTexts] = await Promise.all([hypFile, ...refFiles].map(readInput));
      const anyJson = [hypFile, ...refFiles].some((f, i) => looksLikeJson(f, [hypText!, ...refTexts][i]!));
      const task = flags.task ?? (anyJson ? 'caption' : 'translation');
      const out =
        task === 'translation'
          ? scoreTranslation(hypFile, hypText!, refFiles, refTexts, flags)
          : scoreCaptions(hypFile, hypText!, refFiles, refTexts, flags);
      process.stdout.write(`${out}\n`);
    });
}

function scoreTranslation(
  hypFile: string,
  hypText: string,
  refFiles: string[],
  refTexts: string[],
  flags: ScoreFlags,
): string {
  const json = [hypFile, ...refFiles].find((f, i) => looksLikeJson(f, [hypText, ...refTexts][i]!));
  if (json !== undefined)
    throw new Error(`score: ${json} looks like JSON; translation scoring reads text, one segment per line`);
  const hyps = splitLines(hypText);
  const refs = refTexts.map(splitLines);
  const mismatched = refFiles.flatMap((f, k) =>
    refs[k]!.length === hyps.length ? [] : [`${f} has ${refs[k]!.length}`],
  );
  if (mismatched.length > 0) {
    throw new Error(
      `score: ${hypFile} has ${hyps.length} lines, but ${mismatched.join(', ')}; every reference needs one line per hypothesis`,
    );
  }
  const lowercase = flags.lowercase ?? false;
  if (flags.sentence) return scoreSentences(hyps, refs, flags.tokenize, lowercase, flags.json ?? false);
  const bleu = corpusBleu(hyps, refs, { tokenize: flags.tokenize, lowercase });
  const bleuSig = bleuSignature(refs.length, { tokenize: flags.tokenize, lowercase });
  const chrfs = [0, 2].map((wordOrder) => {
    const options = { wordOrder, lowercase };
    return { score: corpusChrf(hyps, refs, options), signature: chrfSignature(refs.length, options) };
  });
  if (flags.json) {
    return JSON.stringify(
      {
        task: 'translation',
        segments: hyps.length,
        bleu: bleuJson(bleu, bleuSig),
        chrf: chrfJson(chrfs[0]!),
        chrfpp: chrfJson(chrfs[1]!),
      },
      null,
      1,
    );
  }
  return [bleu.format({ signature: bleuSig }), ...chrfs.map((c) => c.score.format({ signature: c.signature }))].join(
    '\n',
  );
}

/** One line per segment: `BLEU = … <TAB> chrF2 = … <TAB> chrF2++ = …`, or one JSON object per line. */
function scoreSentences(
  hyps: string[],
  refs: string[][],
  tokenize: BleuTokenizerName,
  lowercase: boolean,
  json: boolean,
): string {
  const bleuOptions = { tokenize, lowercase };
  const chrfOptions = [0, 2].map((wordOrder) => ({ wordOrder, lowercase }));
  return hyps
    .map((hyp, i) => {
      const segmentRefs = refs.map((r) => r[i]!);
      const bleu = sentenceBleu(hyp, segmentRefs, bleuOptions);
      const [chrf, chrfpp] = chrfOptions.map((o) => sentenceChrf(hyp, segmentRefs, o));
      if (json) return JSON.stringify({ bleu: bleu.score, chrf: chrf!.score, chrfpp: chrfpp!.score });
      return [bleu.format(), chrf!.format(), chrfpp!.format()].join('\t');
    })
    .join('\n');
}

function bleuJson(score: BleuScore, signature: string) {
  const { score: value, counts, totals, precisions, bp, ratio, sysLen, refLen } = score;
  return {
    name: 'BLEU',
    score: value,
    signature,
    counts,
    totals,
    precisions,
    bp,
    ratio,
    hyp_len: sysLen,
    ref_len: refLen,
  };
}

function chrfJson({ score, signature }: { score: ChrfScore; signature: string }) {
  return { name: score.name, score: score.score, signature };
}

function scoreCaptions(
  hypFile: string,
  hypText: string,
  refFiles: string[],
  refTexts: string[],
  flags: ScoreFlags,
): string {
  let hyps: string[];
  let refs: string[][];
  let training: string[] = [];
  let source: string;
  if (refFiles.length === 1 && looksLikeJson(refFiles[0]!, refTexts[0]!)) {
    const parsed = parseCaptionReferences(refFiles[0]!, refTexts[0]!, flags.split);
    hyps = parseCaptionHypotheses(hypFile, hypText, parsed);
    ({ captions: refs, training, source } = parsed);
  } else {
    const json = refFiles.find((f, i) => looksLikeJson(f, refTexts[i]!));
    if (json !== undefined) throw new Error(`score: ${json}: give one caption JSON, or text files only`);
    if (looksLikeJson(hypFile, hypText)) {
      throw new Error(`score: ${hypFile} is JSON (COCO results); its references must be a caption JSON too`);
    }
    hyps = splitLines(hypText);
    const streams = refTexts.map(splitLines);
    streams.forEach((s, k) => {
      if (s.length !== hyps.length)
        throw new Error(`score: ${hypFile} has ${hyps.length} captions, ${refFiles[k]} has ${s.length}`);
    });
    refs = hyps.map((_, i) => streams.map((s) => s[i]!));
    source = `${refFiles.length} reference file(s)`;
  }
  const scores = evaluateCaptions(hyps, refs, training.length > 0 ? trainingCounts(training) : undefined);
  if (flags.json) return JSON.stringify({ task: 'caption', references: source, ...scores }, null, 1);
  return formatCaptionScores(scores, source, refs);
}

/** Word counts of the training captions, split as the `caption` tokeniser splits them. */
function trainingCounts(captions: readonly string[]): Map<string, number> {
  const { tokenize } = getTokenizer('caption');
  const counts = new Map<string, number>();
  for (const c of captions) for (const w of tokenize(c, 'en')) counts.set(w, (counts.get(w) ?? 0) + 1);
  return counts;
}

function formatCaptionScores(s: CaptionScores, source: string, refs: readonly (readonly string[])[]): string {
  const f = (x: number) => x.toFixed(4);
  const lines = [
    `images ${s.count}, references ${refs.reduce((n, r) => n + r.length, 0)} (${source}); coco-caption tokenisation`,
    `BLEU-1 ${f(s.bleu1)}  BLEU-2 ${f(s.bleu2)}  BLEU-3 ${f(s.bleu3)}  BLEU-4 ${f(s.bleu4)}`,
    `ROUGE-L ${f(s.rougeL)}`,
    `CIDEr-D ${f(s.ciderD)}`,
    `vocabulary ${s.vocab.distinctWords} distinct words of ${s.vocab.totalWords}`,
  ];
  if (s.vocab.rare) {
    const r = s.vocab.rare;
    lines.push(
      `rare words (< ${r.threshold} in training) ${(100 * r.share).toFixed(2)}% of words, ${r.distinct} distinct`,
    );
  }
  return lines.join('\n');
}
