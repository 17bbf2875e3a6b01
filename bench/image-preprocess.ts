/**
 * What a caption upload's preprocessing (core/image/preprocess.ts) costs the server's event loop:
 * per image size, the time preprocessRgba takes on the main thread, and the longest event-loop
 * stall while 5 images are preprocessed inline vs in serve/image-preprocess-thread.ts, side by
 * side in one process.
 *
 *   npm run bench:preprocess
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { DEFAULT_IMAGE_SPEC, preprocessRgba } from '../core/image/preprocess.ts';
import { ImagePreprocessThread } from '../serve/image-preprocess-thread.ts';

const SIZES: [number, number][] = [
  [640, 480],
  [2000, 1500],
  [5000, 5000],
];
const REPEAT = 5;

const image = (w: number, h: number) => new Uint8Array(w * h * 4).map((_, i) => (i * 2654435761) >>> 24);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

/** The longest gap between event-loop turns (ms) while `work` runs. */
async function longestStall(work: () => Promise<unknown>): Promise<number> {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  await work();
  histogram.disable();
  return histogram.max / 1e6;
}

const thread = new ImagePreprocessThread();
await thread.run(image(8, 8), 8, 8, DEFAULT_IMAGE_SPEC); // start-up outside the measurements

const rows: string[] = [];
for (const [w, h] of SIZES) {
  const rgba = image(w, h);
  const times: number[] = [];
  for (let i = 0; i < REPEAT; i++) {
    const t0 = performance.now();
    preprocessRgba(rgba, w, h, DEFAULT_IMAGE_SPEC);
    times.push(performance.now() - t0);
  }
  const yieldTurn = () => new Promise((r) => setImmediate(r));
  const inline = await longestStall(async () => {
    for (let i = 0; i < REPEAT; i++) {
      preprocessRgba(rgba, w, h, DEFAULT_IMAGE_SPEC);
      await yieldTurn();
    }
  });
  // Copies made beforehand: each run hands its buffer over, as the server hands over a decoded upload.
  const copies = Array.from({ length: REPEAT }, () => rgba.slice());
  const threaded = await longestStall(async () => {
    for (const copy of copies) await thread.run(copy, w, h, DEFAULT_IMAGE_SPEC);
  });
  rows.push(`| ${w}×${h} | ${median(times).toFixed(1)} | ${inline.toFixed(1)} | ${threaded.toFixed(1)} |`);
}
await thread.close();

console.log(
  `\nImage preprocessing (${DEFAULT_IMAGE_SPEC.size}×${DEFAULT_IMAGE_SPEC.size} output), ${REPEAT} images per size\n`,
);
console.log(
  '| image | preprocessRgba, median ms | longest event-loop stall, inline (ms) | longest stall, preprocessing thread (ms) |',
);
console.log('|---|---:|---:|---:|');
for (const r of rows) console.log(r);
