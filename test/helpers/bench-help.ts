/**
 * `node --import tsx bench/FILE.ts --help` for several bench files, each loaded as its own entry module
 * with its own command line, in ONE child process: a bench loads tfjs, onnxruntime and the models before
 * it reads its flags (2-4 s of CPU a process), and the benches share those modules. What each one
 * printed and the status it exited with are what a separate process would have given: `--help` prints
 * and calls process.exit before any work.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { REPO_ROOT } from '../../train/data/paths.ts';

export interface BenchHelp {
  /** The exit status it asked for (1 for an uncaught error, 0 when it returned without exiting). */
  status: number;
  stdout: string;
  stderr: string;
}

/** Each file's `--help` (paths relative to the repository), run in one child process from the repository root. */
export function benchHelps(files: readonly string[], timeoutMs = 240_000): Promise<Record<string, BenchHelp>> {
  const entries = files.map((f) => [join(REPO_ROOT, f), pathToFileURL(join(REPO_ROOT, f)).href]);
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL('bench-help-runner.ts', import.meta.url)), JSON.stringify(entries)],
    { cwd: REPO_ROOT, timeout: timeoutMs, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const line = stdout.trim().split('\n').pop() ?? '';
      if (code !== 0 || !line.startsWith('{'))
        return reject(new Error(`the bench --help runner exited ${code ?? signal}:\n${stderr}\n${stdout}`));
      const byPath = JSON.parse(line) as Record<string, BenchHelp>;
      resolve(Object.fromEntries(files.map((f, i) => [f, byPath[entries[i]![0]!]!])));
    });
  });
}
