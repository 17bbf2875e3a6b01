/**
 * Debian's PyTorch for the tests that compare frost with a reference written in PyTorch (frost's heads in
 * python/frost_heads, safetensors files written by torch). Without it those tests fail saying what to
 * install (.ci/run installs python3-torch), as the ONNX checks do without python3-onnx.
 */
import { spawnSync } from 'node:child_process';

/**
 * A python3 with PyTorch: $FROST_PYTHON, Debian's (pyenv shims may shadow it), or the first on PATH. It only looks for
 * the package (importing torch takes a second); a torch that is there but broken fails the batch, with its traceback.
 */
export function findTorchPython(): string {
  const candidates = [process.env.FROST_PYTHON, '/usr/bin/python3', 'python3'].filter((p): p is string => !!p);
  const probe = 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)';
  for (const candidate of candidates) {
    if (spawnSync(candidate, ['-c', probe], { stdio: 'ignore' }).status === 0) return candidate;
  }
  throw new Error(
    `no python with PyTorch (tried ${candidates.join(', ')}): apt-get install python3-torch (.ci/run does)`,
  );
}
