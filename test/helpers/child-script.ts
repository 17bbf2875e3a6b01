import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

const REPO_ROOT = new URL('../../', import.meta.url).pathname;

/**
 * Runs `script` in a fresh Node process (with tsx, in the repository root, so it imports the repository's
 * modules by `./core/...` paths) and returns the JSON value on the last line it printed; fails with the
 * child's stderr when it exits with an error. For what needs a process of its own, such as the threaded
 * wasm build. The script is CommonJS that awaits dynamic `import()`s: `--input-type=module` would be
 * inherited by the pthread workers (worker_threads copy execArgv) and refused there.
 */
export function runScriptInChild<T>(script: string, timeoutMs: number): T {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: timeoutMs,
  });
  assert.equal(r.status, 0, r.stderr.slice(-2000));
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as T;
}
