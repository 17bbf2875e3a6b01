import { type Command, Option } from 'commander';
import { resolve } from 'node:path';
import { FAIRSEQ_BPE, type FairseqBpe } from '../../../core/subword/fairseq-tokenizer.ts';
import { importFairseq } from '../../../train/import/fairseq.ts';
import { importMarian } from '../../../train/import/marian.ts';

/** The flags every `frost import` takes (sharedOptions). */
interface ImportFlags {
  out: string;
  src?: string;
  tgt?: string;
  data?: string;
  dataKind: 'multi30k' | 'plain';
  quiet?: boolean;
}

interface ImportFairseqFlags extends ImportFlags {
  dicts?: string;
  bpe?: FairseqBpe;
  bpeFile?: string;
}

/** --out, --src, --tgt (`languages`: where their defaults are read), --data, --data-kind and --quiet. */
function sharedOptions(command: Command, languages: string): Command {
  return command
    .requiredOption('--out <run>', 'run folder to write (must not exist)')
    .option('--src <lang>', `source language (default: ${languages}source_lang)`)
    .option('--tgt <lang>', `target language (default: ${languages}target_lang)`)
    .option('--data <dir>', "a corpus for export's parity and precision checks (default: none, synthetic inputs)")
    .addOption(new Option('--data-kind <kind>', 'layout of --data').choices(['multi30k', 'plain']).default('multi30k'))
    .option('--quiet', 'no summary line');
}

/** The import options those flags give. */
function sharedImportOptions(flags: ImportFlags) {
  return {
    out: resolve(flags.out),
    ...(flags.src ? { src: flags.src } : {}),
    ...(flags.tgt ? { tgt: flags.tgt } : {}),
    ...(flags.data ? { data: { dir: resolve(flags.data), kind: flags.dataKind } } : {}),
  };
}

/**
 * `frost import marian DIR --out RUN`: a Hugging Face Marian folder (an opus-mt model) as a frost run folder, which
 * `frost export`, `translate`, `serve` and `report` then take like any Transformer run (docs/import.md).
 */
export function registerImport(program: Command): void {
  const command = program
    .command('import')
    .description('bring a model trained elsewhere in as a frost run folder (see docs/import.md)');
  const marian = command
    .command('marian')
    .description('import a Hugging Face Marian (opus-mt) folder: config.json, model.safetensors, *.spm, vocab.json')
    .argument('<dir>', 'the Hugging Face model folder, as downloaded');
  sharedOptions(marian, "tokenizer_config.json's ").action(async (dir: string, flags: ImportFlags) => {
    const result = await importMarian({ from: resolve(dir), ...sharedImportOptions(flags) });
    if (!flags.quiet) {
      const { src, tgt } = result.config.data;
      process.stdout.write(
        `imported ${src}→${tgt} Marian model: ${result.parameters} parameters, ${result.vocabSize} tokens → ${result.out}\n`,
      );
    }
  });
  const fairseq = command
    .command('fairseq')
    .description(
      "import a fairseq transformer or lightconv (LightConv, DynamicConv) checkpoint converted by 'python3 -m frost_torch.convert_checkpoint' (model.safetensors, fairseq.json) with its dict.*.txt",
    )
    .argument('<checkpoint>', 'the converted folder (a .pt file is refused: frost reads no pickles)')
    .option('--dicts <dir>', 'where dict.SRC.txt and dict.TGT.txt are (default: the checkpoint folder)')
    .addOption(
      new Option('--bpe <kind>', "the BPE the model was trained with (default: fairseq.json's, else none)").choices([
        ...FAIRSEQ_BPE,
      ]),
    )
    .option(
      '--bpe-file <file>',
      'subword_nmt codes or SentencePiece model (default: bpecodes / sentencepiece.bpe.model)',
    );
  sharedOptions(fairseq, "fairseq.json's task.").action(async (checkpoint: string, flags: ImportFairseqFlags) => {
    const result = await importFairseq({
      from: resolve(checkpoint),
      ...sharedImportOptions(flags),
      ...(flags.dicts ? { dicts: resolve(flags.dicts) } : {}),
      ...(flags.bpe ? { bpe: flags.bpe } : {}),
      ...(flags.bpeFile ? { bpeFile: resolve(flags.bpeFile) } : {}),
    });
    if (!flags.quiet) {
      const { src, tgt } = result.config.data;
      process.stdout.write(
        `imported ${src}→${tgt} fairseq ${result.config.arch} (${result.head} head): ${result.parameters} parameters, ${result.srcVocab}/${result.tgtVocab} tokens → ${result.out}\n`,
      );
    }
  });
}
