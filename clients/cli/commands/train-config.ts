import { isSubwordKind, SUBWORD_KINDS } from '../../../core/subword/subword-spec.ts';
import { resolveHeadOptions } from '../../../models/index.ts';
import type { RunConfig } from '../../../train/run-config.ts';
import { newRunTask, tasksWith, type NewRunFlags } from './train-tasks/index.ts';

export type { NewRunFlags } from './train-tasks/index.ts';

/**
 * A new run's config from the flags; unset flags take the task's defaults from the schema (the
 * paper's: translation lr 1e-3, batch 64, min frequency 2; captioning lr 4e-4, batch 32, min
 * frequency 5). For `--encoder`, the ONNX file is described and copied into `runDir`.
 */
export async function newRunConfig(flags: NewRunFlags, runDir: string): Promise<RunConfig> {
  const task = newRunTask(flags.task);
  if (!flags.data && !task.defaultData) throw new Error('give --data DIR (see `frost data --help` to get a corpus)');
  const arch = flags.arch ?? task.defaultArch;
  const kindOfVocab = flags.vocab ?? 'word';
  const subword = isSubwordKind(kindOfVocab);
  if (kindOfVocab !== 'word' && !subword)
    throw new Error(`--vocab ${flags.vocab}: expected word, ${SUBWORD_KINDS.join(' or ')}`);
  const subwordFlag = `--vocab ${SUBWORD_KINDS.join('|')}`;
  if (flags.jointVocab && !subword) throw new Error(`--joint-vocab needs ${subwordFlag}`);
  if (flags.jointVocab && !task.jointVocabulary)
    throw new Error(`--joint-vocab is for ${tasksWith('jointVocabulary')}`);
  const compact = subword && task.compactOutput === true;
  if (flags.keepUnseenOutputs && !compact)
    throw new Error(`--keep-unseen-outputs is for ${tasksWith('compactOutput')} with ${subwordFlag}`);
  if (flags.smoothSeenOnly && (!compact || flags.keepUnseenOutputs))
    throw new Error(
      `--smooth-seen-only is for ${tasksWith('compactOutput')} with ${subwordFlag}, unseen pieces excluded`,
    );
  if (subword && flags.minFreq !== undefined) throw new Error('--min-freq is for word vocabularies (--vocab word)');
  const vocab = (minFreq: number | undefined): Record<string, unknown> =>
    subword
      ? {
          kind: kindOfVocab,
          size: flags.vocabSize ?? 8000,
          joint: flags.jointVocab ?? false,
          // A new run of a task that declares compactOutput scores only the pieces its targets use; older runs'
          // config.json files lack the field and keep their full-size output layers.
          ...(flags.keepUnseenOutputs
            ? { maskUnseen: false }
            : compact
              ? { compactOutput: true, ...(flags.smoothSeenOnly ? { smoothSeenOnly: true } : {}) }
              : {}),
        }
      : {
          kind: 'word',
          ...(minFreq !== undefined ? { minFreq } : {}),
          ...(flags.vocabSize !== undefined ? { maxSize: flags.vocabSize } : {}),
        };
  // Checked here so a mistyped --head-option is refused before any data is read.
  resolveHeadOptions(flags.head, flags.headOption);
  return task.runConfig(flags, { arch, runDir, subword, vocab });
}
