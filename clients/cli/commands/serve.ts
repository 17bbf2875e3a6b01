import { type Command, InvalidArgumentError, Option } from 'commander';
import { resolve } from 'node:path';
import { DEVICES, type Device } from '../../../core/runtime/load-node.ts';
import { DEFAULT_LIMITS } from '../../../serve/schemas.ts';
import { startServer } from '../../../serve/server.ts';

interface ServeFlags {
  models: string;
  port: number;
  host: string;
  device: Device;
  threads: number;
  defaultModel?: string;
  maxTextChars: number;
  maxBatch: number;
}

/** A commander parser for integers in [min, max]; the error names the flag. */
export function intOption(flag: string, min: number, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\s*-?\d+\s*$/.test(value) || !Number.isSafeInteger(n) || n < min || n > max) {
      const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `in ${min}..${max}`;
      throw new InvalidArgumentError(`${flag} must be an integer ${range}, got '${value}'`);
    }
    return n;
  };
}

/** `frost serve`: the HTTP translation server (see serve/app.ts for the API). */
export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('serve exported models over HTTP: POST /v1/translate, GET /v1/models, GET /healthz')
    .requiredOption('--models <dir>', 'a model directory (with model-card.json) or a directory of them')
    .option('--port <n>', 'port to listen on (0 picks a free one)', intOption('--port', 0, 65535), 8080)
    .option('--host <addr>', 'address to bind; 0.0.0.0 exposes the server to the network', '127.0.0.1')
    .addOption(new Option('--device <device>', 'where to run the models').choices(DEVICES).default('cpu'))
    .option('--threads <n>', 'ONNX Runtime intra-op threads per session (0: one per core)', intOption('--threads', 0), 0)
    .option('--default-model <name>', 'model used when a request names none (default: the only model)')
    .option('--max-text-chars <n>', 'longest accepted text', intOption('--max-text-chars', 1), DEFAULT_LIMITS.maxTextChars)
    .option('--max-batch <n>', 'most texts per request', intOption('--max-batch', 1), DEFAULT_LIMITS.maxBatch)
    .action(async (flags: ServeFlags) => {
      const server = await startServer({
        modelsDir: resolve(flags.models),
        port: flags.port,
        host: flags.host,
        device: flags.device,
        intraOpNumThreads: flags.threads,
        defaultModel: flags.defaultModel,
        limits: { maxTextChars: flags.maxTextChars, maxBatch: flags.maxBatch },
      });
      // Resolves on Ctrl-C / SIGTERM once connections are closed and sessions released.
      await new Promise<void>((done) => {
        const stop = (signal: NodeJS.Signals) => {
          process.stderr.write(`frost serve: ${signal}, shutting down\n`);
          server.close().then(done, done);
        };
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
    });
}
