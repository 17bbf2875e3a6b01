import { type Command, Option } from 'commander';
import { resolve } from 'node:path';
import { decodeImage } from '../../../core/image/decode-node.ts';
import { preprocessRgba } from '../../../core/image/preprocess.ts';
import { DEFAULT_CAPTION_BEAM, DEFAULT_CAPTION_MAX_LENGTH } from '../../../core/runtime/caption.ts';
import { DEVICES, type Device, loadCaptionModelDir } from '../../../core/runtime/load-node.ts';
import { intOption } from './serve.ts';

interface CaptionFlags {
  beam: number;
  maxLen: number;
  json?: boolean;
  device: Device;
  threads: number;
}

/**
 * `frost caption MODEL_DIR IMAGE...`: one caption per JPEG or PNG, decoded and preprocessed as the
 * server and the browser do (core/image). With one image the caption is printed alone; with several,
 * `path<TAB>caption` per line; `--json` prints one object per image. An image that cannot be used
 * stops the command with its path and the reason.
 */
export function registerCaption(program: Command): void {
  program
    .command('caption')
    .description('caption images with an exported caption model')
    .argument('<model-dir>', 'exported caption model directory (with model-card.json)')
    .argument('<images...>', 'JPEG or PNG files')
    .option('--beam <k>', 'beam size (1: greedy)', intOption('--beam', 1), DEFAULT_CAPTION_BEAM)
    .option('--max-len <n>', 'most words per caption', intOption('--max-len', 1), DEFAULT_CAPTION_MAX_LENGTH)
    .option('--json', 'one JSON object per image: {image, caption, tokens, score}')
    .addOption(new Option('--device <device>', 'where to run the model').choices(DEVICES).default('cpu'))
    .option('--threads <n>', 'ONNX Runtime intra-op threads (0: one per core)', intOption('--threads', 0), 0)
    .action(async (modelDir: string, images: string[], flags: CaptionFlags) => {
      // Decode first: a bad file fails in milliseconds, before the model is loaded.
      const decoded = await Promise.all(
        images.map((path) => decodeImage(path).catch((err: unknown) => Promise.reject(fileError(path, err)))),
      );
      const runtime = await loadCaptionModelDir(resolve(modelDir), {
        device: flags.device,
        intraOpNumThreads: flags.threads,
      });
      try {
        const pixels = decoded.map((im) => preprocessRgba(im.rgba, im.width, im.height, runtime.imageSpec));
        const captions = await runtime.caption(pixels, { beam: flags.beam, maxLength: flags.maxLen });
        captions.forEach((c, i) => {
          const line = flags.json
            ? JSON.stringify({ image: images[i], caption: c.text, tokens: c.tokens, score: c.score })
            : images.length === 1
              ? c.text
              : `${images[i]}\t${c.text}`;
          process.stdout.write(`${line}\n`);
        });
      } finally {
        await runtime.release();
      }
    });
}

/** A file-system error as one line naming the file (`photo.jpg: no such file`), other errors as they are. */
function fileError(path: string, err: unknown): unknown {
  const what: Record<string, string> = {
    ENOENT: 'no such file',
    EISDIR: 'a directory, not an image file',
    EACCES: 'permission denied',
  };
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code !== undefined && code in what ? new Error(`${path}: ${what[code]}`, { cause: err }) : err;
}
