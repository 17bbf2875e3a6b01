/**
 * ONNX's Python checker (onnx-check.ts's checkModel: the same script, the same report) kept running in
 * one Python process for many models. Starting Python and importing onnx costs about half a second of CPU
 * a model, more than checking a tiny one: a test file that checks many models starts one checker, sends
 * it each model in turn, and closes it at the end.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { CHECK_SCRIPT, type CheckReport, findPython } from './onnx-check.ts';

/**
 * Reads one model path a line and answers one JSON line: the script's report, or its traceback. The
 * script runs as its own module each time (it reads sys.argv[1] and prints its report); only the imports
 * are shared.
 */
const SERVER_SCRIPT = String.raw`
import contextlib, io, json, sys, traceback
script = compile(sys.argv[1], 'check', 'exec')
for line in sys.stdin:
    sys.argv = ['check', line.rstrip('\n')]
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(script, {'__name__': '__main__'})
        answer = {'report': out.getvalue().strip().split('\n')[-1]}
    except BaseException:
        answer = {'error': traceback.format_exc()}
    sys.stdout.write(json.dumps(answer) + '\n')
    sys.stdout.flush()
`;

export interface OnnxChecker {
  /** checkModel's check of `model` (bytes or a file path); rejects as checkModel throws when it fails. */
  check(model: Uint8Array | string): Promise<CheckReport>;
  /** Ends the Python process. */
  close(): Promise<void>;
}

/** Starts a checker; checks run one after another in the order asked. */
export async function startOnnxChecker(): Promise<OnnxChecker> {
  const dir = await mkdtemp(join(tmpdir(), 'frost-onnx-checker-'));
  const child: ChildProcessWithoutNullStreams = spawn(findPython(), ['-c', SERVER_SCRIPT, CHECK_SCRIPT]);
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const waiting: { resolve: (line: string) => void; reject: (err: Error) => void }[] = [];
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  void exited.then(() => {
    for (const w of waiting.splice(0)) w.reject(new Error(`the onnx checker exited:\n${stderr.trim()}`));
  });
  createInterface({ input: child.stdout }).on('line', (line) => waiting.shift()?.resolve(line));
  let count = 0;
  let queue = Promise.resolve();

  async function checkOne(model: Uint8Array | string): Promise<CheckReport> {
    let path = model;
    if (typeof path !== 'string') {
      path = join(dir, `model-${count++}.onnx`);
      await writeFile(path, model);
    }
    try {
      const line = await new Promise<string>((resolve, reject) => {
        waiting.push({ resolve, reject });
        child.stdin.write(`${path}\n`);
      });
      const answer = JSON.parse(line) as { report?: string; error?: string };
      if (answer.error !== undefined) throw new Error(`onnx checker failed:\n${answer.error.trim()}`);
      return JSON.parse(answer.report!) as CheckReport;
    } finally {
      if (typeof model !== 'string') await rm(path, { force: true });
    }
  }

  return {
    check(model) {
      const result = queue.then(() => checkOne(model));
      queue = result.then(
        () => undefined,
        () => undefined,
      );
      return result;
    },
    async close() {
      child.stdin.end();
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
