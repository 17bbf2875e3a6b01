import { type Command, InvalidArgumentError } from 'commander';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { convertLayersModel, readModelFiles } from '../../../export/convert/index.ts';

/** --opset: an integer (the converter checks the range). */
function parseOpset(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n)) throw new InvalidArgumentError('expected an integer');
  return n;
}

/** --batch: 'dynamic' or a positive integer. */
function parseBatch(value: string): 'dynamic' | number {
  if (value === 'dynamic') return value;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError("expected 'dynamic' or a positive integer");
  return n;
}

/**
 * `frost convert MODEL_JSON --out OUT.onnx`: converts a TensorFlow.js
 * LayersModel (model.json + weight shards) to ONNX. No tfjs backend needed:
 * the converter reads the files directly.
 */
export function registerConvert(program: Command): void {
  program
    .command('convert')
    .description('convert a TensorFlow.js LayersModel (model.json + weights) to ONNX')
    .argument('<model-json>', 'model.json written by tfjs model.save() or tensorflowjs_converter')
    .requiredOption('--out <file>', 'ONNX file to write')
    .option('--opset <n>', 'ONNX opset of the default domain (13-21)', parseOpset, 18)
    .option('--batch <size>', "batch dimension: 'dynamic' or a fixed size", parseBatch, 'dynamic' as 'dynamic' | number)
    .option('--quiet', 'no summary line')
    .action(
      async (modelJson: string, flags: { out: string; opset: number; batch: 'dynamic' | number; quiet?: boolean }) => {
        const artifacts = await readModelFiles(resolve(modelJson));
        const result = convertLayersModel(artifacts, { opset: flags.opset, batch: flags.batch });
        const out = resolve(flags.out);
        await mkdir(dirname(out), { recursive: true });
        await writeFile(out, result.bytes);
        if (!flags.quiet) {
          process.stdout.write(
            `converted ${result.layers} layers → ${result.ops} ONNX ops, ${result.bytes.byteLength} bytes: ${out}\n`,
          );
        }
      },
    );
}
