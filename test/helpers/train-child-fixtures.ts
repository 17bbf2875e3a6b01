/**
 * Cached runs of `frost train ARGS` made by bin/frost.js in a child process with a given environment
 * (cached-fixture.ts): for a run that must match, bit for bit, runs an experiment starts as children with
 * that environment (thread counts), where an in-process build (cli-train-fixtures.ts) would train under
 * the test process's own. The folders are shared and read-only: copy them (copyFixture) before writing.
 */
import { join } from 'node:path';
import { cachedFixture } from './cached-fixture.ts';
import { DATA_DIR, RUN_DIR } from './cli-train-fixtures.ts';
import { startFrost } from './frost-cli.ts';
import { type ToyCorpusSize, writeToyData } from './toy-run.ts';

export { DATA_DIR, RUN_DIR };

/** Environment variables that decide how a trainer computes, whoever builds the fixture. */
const COMPUTE_ENV = ['FROST_WASM_THREADS', 'FROST_NATIVE_GEMM', 'FROST_NATIVE_GEMM_THREADS', 'OMP_NUM_THREADS'];

/**
 * `frost train ...args` (DATA_DIR and RUN_DIR replaced by the fixture's toy corpus and run folder) on a toy
 * corpus of `corpus`'s size, in a child with `env` over this process's environment: its corpus and run.
 * @param name the fixture's name, [a-z0-9-]+
 */
export async function cachedTrainChildRun(
  name: string,
  corpus: ToyCorpusSize,
  args: readonly string[],
  env: Record<string, string>,
): Promise<{ dataDir: string; runDir: string }> {
  const childEnv = Object.fromEntries(COMPUTE_ENV.map((k) => [k, env[k] ?? process.env[k] ?? null]));
  const dir = await cachedFixture({
    name: `train-child-${name}`,
    settings: { corpus, args, env: childEnv },
    helpers: ['train-child-fixtures.ts', 'cli-train-fixtures.ts', 'frost-cli.ts', 'toy-run.ts'],
    // The command's flags and defaults live there.
    sources: ['clients/cli', 'bin'],
    async build(into) {
      const dataDir = await writeToyData(join(into, 'toy'), corpus);
      const runDir = join(into, 'run');
      const filled = args.map((a) => (a === DATA_DIR ? dataDir : a === RUN_DIR ? runDir : a));
      const { code, stderr } = await startFrost(['train', ...filled], env).exited;
      if (code !== 0) throw new Error(`frost train ${filled.join(' ')} exited ${code}:\n${stderr}`);
    },
  });
  return { dataDir: join(dir, 'toy'), runDir: join(dir, 'run') };
}
