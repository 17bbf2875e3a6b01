import { type Command, InvalidArgumentError, Option } from 'commander';
import { resolve } from 'node:path';
import { DEVICES, type Device } from '../../../core/runtime/load-node.ts';
import { DEFAULT_BATCHING } from '../../../serve/batcher.ts';
import { defaultMaxConnections } from '../../../serve/connection-limits.ts';
import { DEFAULT_LIMITS } from '../../../serve/schemas.ts';
import { startServer } from '../../../serve/server.ts';
import { defaultWorkers } from '../../../serve/worker-runtime.ts';
import { webClient } from '../../web/build/web-client.ts';

interface ServeFlags {
  models: string;
  port: number;
  host: string;
  device: Device;
  threads: number;
  workers: number;
  defaultModel?: string;
  maxTextChars: number;
  maxTexts: number;
  maxBodyBytes: number;
  maxImageBytes: number;
  maxImagePixels: number;
  maxImageSide: number;
  timeoutMs: number;
  maxBatch: number;
  maxWaitMs: number;
  maxQueue: number;
  batchConcurrency?: number;
  watch: boolean;
  reports: string;
  drainTimeoutMs: number;
  maxConnections?: number;
  allowOrigin?: string[];
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
    .description(
      'serve exported models over HTTP: POST /v1/translate, POST /v1/caption, GET /v1/models, /healthz, /readyz, /metrics, /openapi.json, /reports/',
    )
    .requiredOption('--models <dir>', 'a model directory (with model-card.json) or a directory of them')
    .option('--port <n>', 'port to listen on (0 picks a free one)', intOption('--port', 0, 65535), 8080)
    .option('--host <addr>', 'address to bind; 0.0.0.0 exposes the server to the network', '127.0.0.1')
    .addOption(new Option('--device <device>', 'where to run the models').choices(DEVICES).default('cpu'))
    .option(
      '--threads <n>',
      'ONNX Runtime intra-op threads per session (0: one per core, split between workers)',
      intOption('--threads', 0),
      0,
    )
    .option(
      '--workers <n>',
      'decode worker threads per model, language models included (each loads the model)',
      intOption('--workers', 1, 64),
      defaultWorkers(),
    )
    .option('--default-model <name>', 'model used when a request names none (default: the only model)')
    .option(
      '--max-text-chars <n>',
      'longest accepted text',
      intOption('--max-text-chars', 1),
      DEFAULT_LIMITS.maxTextChars,
    )
    .option('--max-texts <n>', 'most texts per request', intOption('--max-texts', 1), DEFAULT_LIMITS.maxBatch)
    .option(
      '--max-body-bytes <n>',
      'largest accepted request body',
      intOption('--max-body-bytes', 1),
      DEFAULT_LIMITS.maxBodyBytes,
    )
    .option(
      '--max-image-bytes <n>',
      'largest accepted image upload (POST /v1/caption)',
      intOption('--max-image-bytes', 1),
      DEFAULT_LIMITS.maxImageBytes,
    )
    .option(
      '--max-image-pixels <n>',
      'most pixels in an accepted image, checked from its header before decoding',
      intOption('--max-image-pixels', 1),
      DEFAULT_LIMITS.maxImagePixels,
    )
    .option(
      '--max-image-side <n>',
      'longest accepted image width or height, checked from its header',
      intOption('--max-image-side', 1),
      DEFAULT_LIMITS.maxImageSide,
    )
    .option(
      '--timeout-ms <n>',
      'answer 504 when a request takes longer; a request whose headers and body take longer to arrive gets 408 and its connection closed',
      intOption('--timeout-ms', 1),
      DEFAULT_LIMITS.timeoutMs,
    )
    .option(
      '--max-connections <n>',
      `most connections open at once; more are closed as they are accepted (default: ulimit -n less 64, now ${defaultMaxConnections()})`,
      intOption('--max-connections', 1),
    )
    .option(
      '--max-batch <n>',
      'most texts decoded together (dynamic batching; 1 turns it off)',
      intOption('--max-batch', 1),
      DEFAULT_BATCHING.maxBatch,
    )
    .option(
      '--max-wait-ms <n>',
      'how long a request waits for others to batch with',
      intOption('--max-wait-ms', 0),
      DEFAULT_BATCHING.maxWaitMs,
    )
    .option(
      '--max-queue <n>',
      'requests waiting per model before 503',
      intOption('--max-queue', 1),
      DEFAULT_BATCHING.maxQueue,
    )
    .option(
      '--batch-concurrency <n>',
      `batches decoding at once per model (default: max(${DEFAULT_BATCHING.concurrency}, --workers))`,
      intOption('--batch-concurrency', 1),
    )
    .option('--reports <dir>', 'folder served under /reports/ (where `frost report` writes)', 'reports')
    .option('--watch', 'reload a model when its directory changes (a broken version is refused)', false)
    .option(
      '--allow-origin <origin...>',
      'browser origins besides the server itself that may POST (e.g. https://app.example.com); others get 403',
    )
    .option(
      '--drain-timeout-ms <n>',
      'on SIGTERM, how long in-flight requests may take',
      intOption('--drain-timeout-ms', 0),
      30_000,
    )
    .action(async (flags: ServeFlags) => {
      const server = await startServer({
        modelsDir: resolve(flags.models),
        port: flags.port,
        host: flags.host,
        device: flags.device,
        intraOpNumThreads: flags.threads,
        workers: flags.workers,
        defaultModel: flags.defaultModel,
        limits: {
          maxTextChars: flags.maxTextChars,
          maxBatch: flags.maxTexts,
          maxBodyBytes: flags.maxBodyBytes,
          maxImageBytes: flags.maxImageBytes,
          maxImagePixels: flags.maxImagePixels,
          maxImageSide: flags.maxImageSide,
          timeoutMs: flags.timeoutMs,
        },
        batching: {
          maxBatch: flags.maxBatch,
          maxWaitMs: flags.maxWaitMs,
          maxQueue: flags.maxQueue,
          concurrency: flags.batchConcurrency,
        },
        watch: flags.watch,
        reportsDir: resolve(flags.reports),
        web: webClient(),
        drainTimeoutMs: flags.drainTimeoutMs,
        maxConnections: flags.maxConnections,
        allowedOrigins: flags.allowOrigin,
      });
      // SIGTERM/Ctrl-C: stop accepting, answer what was received, release the models, exit 0.
      // A second signal exits at once.
      const signal = await new Promise<NodeJS.Signals>((done) => {
        process.once('SIGINT', done);
        process.once('SIGTERM', done);
      });
      server.logger.info({ signal }, 'shutting down');
      const force = (again: NodeJS.Signals) => {
        server.logger.warn({ signal: again }, 'second signal: exiting without draining');
        process.exit(1);
      };
      process.once('SIGINT', force);
      process.once('SIGTERM', force);
      await server.close();
      process.exit(0);
    });
}
