/**
 * A node:test reporter that prints how long each test file took, slowest first, once the run's
 * last file has finished (at the run's own plan, just before spec's pass/fail summary, which stays
 * the run's closing lines). `npm test` sends it to stderr beside the spec reporter on stdout, so the
 * slow files are visible on every run
 * (docs/development.md keeps the ten slowest with why each is slow). Plain JavaScript: node loads
 * reporters before `--import tsx` can teach it TypeScript.
 */
import { relative } from 'node:path';

/** @param {AsyncIterable<import('node:test/reporters').TestEvent>} source */
export default async function* fileDurations(source) {
  /** @type {{ file: string, ms: number, passed: boolean }[]} */
  const files = [];
  for await (const event of source) {
    // The run's own plan (no file) comes once every file has completed.
    if (event.type === 'test:plan' && event.data.nesting === 0 && event.data.file === undefined) {
      yield* table(files.splice(0));
      continue;
    }
    if (event.type !== 'test:complete') continue;
    const { data } = event;
    // The runner reports each file as a test at the top level named by the file's path.
    if (data.nesting !== 0 || data.file === undefined || data.name !== data.file) continue;
    files.push({ file: relative(process.cwd(), data.file), ms: data.details.duration_ms, passed: data.details.passed });
  }
  yield* table(files);
}

/** @param {{ file: string, ms: number, passed: boolean }[]} files */
function* table(files) {
  if (files.length === 0) return;
  files.sort((a, b) => b.ms - a.ms);
  const total = files.reduce((sum, f) => sum + f.ms, 0);
  const rows = files.map((f) => `${seconds(f.ms).padStart(8)} s  ${f.file}${f.passed ? '' : '  (failed)'}\n`);
  // One write, so that spec's summary on the other stream does not land between its lines.
  yield `\nper-file durations (${files.length} files, ${seconds(total)} s of file time in all), slowest first:\n${rows.join('')}`;
}

/** @param {number} ms */
function seconds(ms) {
  return (ms / 1000).toFixed(1);
}
