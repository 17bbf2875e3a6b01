/**
 * The web client measured in a real browser: starts `frost serve` (in this process) on 127.0.0.1 with
 * the models in --models, opens its page in headless Chromium (test/helpers/browser.ts) and, for each
 * model, drives the page's own UI (choose the model, load it, type the sentences, translate) to measure
 *
 * - the download: bytes of the two graphs;
 * - the load time, from the click on "Load model" until the page is ready: cold (Cache Storage and
 *   the HTTP cache cleared, so ONNX Runtime's wasm and the graphs are downloaded) and warm (a fresh
 *   page that takes both from Cache Storage), with the page's own split into download and session
 *   creation;
 * - per-sentence latency in the browser at beam 1 and beam 5, on ~20 sentences in the model's source
 *   language (Multi30k test2016 when the data is there, else a built-in list), and the server's
 *   latency for the same sentences (the page's "compare with the server" switch: round trip from the
 *   page, and the server's own `timing.total_ms`), with whether both gave the same words.
 *
 * Then it loads every model into one page, translates with the best one (highest validation BLEU on
 * its card) and saves a screenshot (docs/screenshot-web.png unless --screenshot says otherwise).
 *
 *   npm run bench:web -- --models runs/bench-mt-30/artifacts
 *   node --import tsx bench/web-load.ts --models DIR [--out reports/web-load] [--sentences 20]
 *     [--repeats 3] [--threads 0] [--screenshot docs/screenshot-web.png | --no-screenshot]
 *
 * Writes web-load.json and web-load.md to --out. The page reads the unrounded figures from the
 * `data-*` attributes of its tables; timings of the load are taken inside the page (performance.now).
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ort as ortNode } from '../core/runtime/ort-node.ts';
import type { Page } from 'playwright-core';
import { MODEL_CARD_FILE, parseModelCard, type ModelCard } from '../core/runtime/model-card.ts';
import { startServer, type RunningServer } from '../serve/server.ts';
import { browserSkipReason, launchBrowser, type TestBrowser } from '../test/helpers/browser.ts';
import { isMulti30kLang, multi30kFileName, readGzipLines } from '../train/data/multi30k.ts';
import { multi30kDir } from '../train/data/paths.ts';
import { webClient } from '../clients/web/build/web-client.ts';

const ROOT = resolve(import.meta.dirname, '..');

const { values: args } = parseArgs({
  options: {
    models: { type: 'string' },
    out: { type: 'string', default: join(ROOT, 'reports', 'web-load') },
    sentences: { type: 'string', default: '20' },
    repeats: { type: 'string', default: '3' },
    threads: { type: 'string', default: '0' },
    screenshot: { type: 'string', default: join(ROOT, 'docs', 'screenshot-web.png') },
    'no-screenshot': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

const USAGE =
  'usage: node --import tsx bench/web-load.ts --models DIR [--out reports/web-load] [--sentences 20] [--repeats 3] [--threads 0] [--screenshot FILE | --no-screenshot]';

/** Sentences for models whose source language has no Multi30k file here (Multi30k-like captions). */
const BUILT_IN: Record<string, string[]> = {
  de: [
    'Ein Mann fährt Fahrrad auf einer Straße.',
    'Zwei Hunde spielen im Schnee.',
    'Eine Frau sitzt auf einer Bank im Park.',
    'Ein kleines Mädchen in einem roten Kleid läuft am Strand.',
    'Eine Gruppe von Menschen steht vor einem Gebäude.',
    'Ein Junge springt in einen See.',
    'Ein Mann in einem blauen Hemd spielt Gitarre.',
    'Zwei Männer arbeiten auf einer Baustelle.',
    'Ein schwarzer Hund rennt über eine Wiese.',
    'Eine Frau kocht in einer Küche.',
    'Kinder spielen Fußball auf einem Feld.',
    'Ein älterer Mann liest eine Zeitung.',
    'Eine Menschenmenge wartet auf einer Straße.',
    'Ein Mann klettert an einer Felswand.',
    'Zwei Frauen unterhalten sich in einem Café.',
    'Ein Mädchen fährt auf einem Skateboard.',
    'Ein Hund fängt einen Ball im Wasser.',
    'Ein Mann mit Hut verkauft Obst auf einem Markt.',
    'Eine Band spielt auf einer Bühne.',
    'Ein Kind schläft auf dem Sofa.',
  ],
  en: [
    'A man rides a bike down the street.',
    'Two dogs are playing in the snow.',
    'A woman sits on a bench in the park.',
    'A little girl in a red dress runs on the beach.',
    'A group of people stand in front of a building.',
    'A boy jumps into a lake.',
    'A man in a blue shirt plays the guitar.',
    'Two men are working at a construction site.',
    'A black dog runs across a meadow.',
    'A woman is cooking in a kitchen.',
    'Children play soccer on a field.',
    'An older man reads a newspaper.',
    'A crowd waits on a street.',
    'A man climbs a rock wall.',
    'Two women talk in a cafe.',
    'A girl rides a skateboard.',
    'A dog catches a ball in the water.',
    'A man in a hat sells fruit at a market.',
    'A band plays on a stage.',
    'A child sleeps on the couch.',
  ],
};

/** One model folder under --models. */
interface ModelEntry {
  dir: string;
  card: ModelCard;
  /** Bytes of the two graphs, from the card. */
  graphBytes: number;
}

/** One load of a model in a fresh page. */
interface LoadRun {
  /** Click on "Load model" → page ready, in the page's clock. */
  totalMs: number;
  /** The page's split: the two graphs' download (or Cache Storage read), then session creation. */
  downloadMs: number;
  sessionMs: number;
  downloadBytes: number;
  cachedBytes: number;
  /** ONNX Runtime's wasm: bytes and whether it came from Cache Storage (from the page's header line). */
  ortFromCache: boolean;
}

/** One sentence translated in the page, and by the server through the page's compare switch. */
interface SentenceRun {
  source: string;
  browserText: string;
  browserMs: number;
  serverText: string;
  serverRoundTripMs: number;
  serverMs: number;
}

interface Stats {
  mean: number;
  p50: number;
  p90: number;
  min: number;
  max: number;
}

function stats(xs: readonly number[]): Stats {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))];
  return { mean: s.reduce((a, b) => a + b, 0) / s.length, p50: q(0.5), p90: q(0.9), min: s[0], max: s[s.length - 1] };
}

const median = (xs: readonly number[]): number => stats(xs).p50;

async function findModels(dir: string): Promise<ModelEntry[]> {
  const read = async (d: string): Promise<ModelEntry> => {
    const cardPath = join(d, MODEL_CARD_FILE);
    const card = parseModelCard(await readFile(cardPath, 'utf8'), cardPath);
    const graphBytes = [card.graphs.encoder.file, card.graphs.decoder.file].reduce(
      (n, f) => n + (card.files[f]?.bytes ?? 0),
      0,
    );
    return { dir: d, card, graphBytes };
  };
  if (existsSync(join(dir, MODEL_CARD_FILE))) return [await read(dir)];
  const entries = await readdir(dir, { withFileTypes: true });
  const dirs = entries
    .filter((e) => e.isDirectory() && existsSync(join(dir, e.name, MODEL_CARD_FILE)))
    .map((e) => join(dir, e.name));
  return Promise.all(dirs.sort().map(read));
}

/** The sentences to translate for a source language, and where they came from. */
async function sentencesFor(lang: string, count: number): Promise<{ sentences: string[]; from: string }> {
  let dataDir: string | undefined;
  try {
    dataDir = multi30kDir();
  } catch {
    dataDir = undefined;
  }
  if (dataDir && isMulti30kLang(lang)) {
    const file = join(dataDir, multi30kFileName('test2016', lang));
    if (existsSync(file)) {
      const lines = (await readGzipLines(file)).map((l) => l.trim()).filter((l) => l.length > 0);
      return {
        sentences: lines.slice(0, count),
        from: `Multi30k test2016 (${multi30kFileName('test2016', lang)}), first ${count} lines`,
      };
    }
  }
  const list = BUILT_IN[lang] ?? BUILT_IN.en;
  return {
    sentences: list.slice(0, count),
    from: `built-in ${BUILT_IN[lang] ? lang : 'en'} list (no Multi30k ${lang} file here)`,
  };
}

/** Waits until the page is ready (or idle, after a navigation); fails with the page's own message on an error. */
async function settle(page: Page, state: 'ready' | 'idle' = 'ready', timeout = 300_000): Promise<void> {
  await page.waitForSelector(`body[data-state="${state}"], body[data-state="error"]`, { timeout });
  if ((await page.getAttribute('body', 'data-state')) === 'error') {
    throw new Error(`the page reports: ${await page.textContent('#status')}`);
  }
}

/** Opens the page afresh (nothing loaded in it; Cache Storage as it is). */
async function openPage(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await settle(page, 'idle');
}

/** Empties Cache Storage through the page's own button, and the browser's HTTP cache through CDP. */
async function clearCaches(page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Clear the cache' }).click();
  await page.waitForFunction(() => document.getElementById('status')?.textContent === 'Cache cleared.');
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.clearBrowserCache');
  await cdp.detach();
}

/** Chooses `name` and clicks "Load model"; the time is taken in the page, from the submit to the ready state. */
async function loadThroughUi(page: Page, name: string): Promise<LoadRun> {
  await page.evaluate(() => {
    const w = window as unknown as { __frostBench: { t0?: number; t1?: number } };
    w.__frostBench = {};
    document
      .getElementById('model-form')!
      .addEventListener('submit', () => (w.__frostBench.t0 = performance.now()), { capture: true, once: true });
    const observer = new MutationObserver(() => {
      const state = document.body.dataset.state;
      if (w.__frostBench.t0 !== undefined && (state === 'ready' || state === 'error')) {
        w.__frostBench.t1 = performance.now();
        observer.disconnect();
      }
    });
    observer.observe(document.body, { attributes: true, attributeFilter: ['data-state'] });
  });
  await page.getByLabel('Model on this server').selectOption(name);
  await page.getByLabel('Run on').selectOption('wasm');
  await page.getByRole('button', { name: 'Load model' }).click();
  await settle(page);
  const { t0, t1 } = await page.evaluate(
    () => (window as unknown as { __frostBench: { t0: number; t1: number } }).__frostBench,
  );
  const row = page.locator(`#models tbody tr[data-model="${name}"]`);
  const num = async (attr: string) => Number(await row.getAttribute(attr));
  const environment = (await page.textContent('#environment')) ?? '';
  return {
    totalMs: t1 - t0,
    downloadMs: await num('data-download-ms'),
    sessionMs: await num('data-load-ms'),
    downloadBytes: await num('data-download-bytes'),
    cachedBytes: await num('data-cached-bytes'),
    ortFromCache: /, cached\)/.test(environment),
  };
}

/** Types the sentences, sets the beam, turns on the server comparison and clicks "Translate". */
async function translateThroughUi(
  page: Page,
  sentences: readonly string[],
  beam: number,
  compare: boolean,
): Promise<SentenceRun[]> {
  await page.getByLabel('Text, one sentence per line').fill(sentences.join('\n'));
  await page.getByLabel('Beam width').fill(String(beam));
  const toggle = page.getByRole('switch', { name: /Compare with the server/ });
  if (compare) await toggle.check();
  else await toggle.uncheck();
  await page.getByRole('button', { name: 'Translate' }).click();
  await settle(page);
  // No named functions inside: tsx would wrap them in a helper (`__name`) the page does not have.
  return page.$$eval('#results tbody tr', (rows) =>
    rows.map((tr) => {
      const [source, browserText, browserMs, serverText, serverMs] = [
        'source',
        'browser-text',
        'browser-ms',
        'server-text',
        'server-ms',
      ].map((cls) => tr.querySelector<HTMLElement>(`td.${cls}`)!);
      return {
        source: source.textContent ?? '',
        browserText: browserText.dataset.text ?? '',
        browserMs: Number(browserMs.dataset.ms),
        serverText: serverText.dataset.text ?? '',
        serverRoundTripMs: Number(serverMs.dataset.ms),
        serverMs: Number(serverMs.dataset.serverMs),
      };
    }),
  );
}

const f0 = (ms: number) => Math.round(ms).toLocaleString('en');
const f1 = (ms: number) => (ms < 100 ? ms.toFixed(1) : f0(ms));
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

async function main(): Promise<void> {
  if (args.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (!args.models) throw new Error(`--models DIR is required\n${USAGE}`);
  const skip = browserSkipReason();
  if (skip) throw new Error(`cannot run: ${skip}`);
  const modelsDir = resolve(args.models);
  const count = Number(args.sentences);
  const repeats = Number(args.repeats);
  const threads = Number(args.threads);
  for (const [name, n] of [
    ['--sentences', count],
    ['--repeats', repeats],
  ] as const) {
    if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer`);
  }
  if (!Number.isInteger(threads) || threads < 0) throw new Error('--threads must be an integer ≥ 0');
  const models = await findModels(modelsDir);
  if (models.length === 0) throw new Error(`${modelsDir}: no model folder (one with ${MODEL_CARD_FILE}) in it`);

  const started = Date.now();
  // On a shared machine the other processes' load is part of the numbers: recorded at start and end.
  const loadAtStart = loadavg()[0];
  const log = (line: string) => process.stdout.write(`${line}\n`);
  let server: RunningServer | undefined;
  let browser: TestBrowser | undefined;
  const results = [];
  let screenshot: string | undefined;
  let userAgent: string;
  let environment = '';
  try {
    // One sentence at a time: the batching wait (5 ms by default) could only add latency, so it is off.
    server = await startServer({
      modelsDir,
      port: 0,
      host: '127.0.0.1',
      intraOpNumThreads: threads,
      batching: { maxWaitMs: 0 },
      web: webClient(),
      log: () => {},
    });
    browser = await launchBrowser();
    const page = await browser.context.newPage();
    page.on('pageerror', (err) => log(`page error: ${err.message}`));
    await openPage(page, server.url);
    userAgent = await page.evaluate(() => navigator.userAgent);

    for (const model of models) {
      const name = model.card.name;
      const lang = model.card.source?.lang ?? model.card.target.lang;
      const { sentences, from } = await sentencesFor(lang, count);
      log(`${name}: ${mb(model.graphBytes)}, ${sentences.length} ${lang} sentences from ${from}`);

      const cold: LoadRun[] = [];
      const warm: LoadRun[] = [];
      for (let r = 0; r < repeats; r++) {
        await openPage(page, server.url);
        await clearCaches(page);
        await openPage(page, server.url);
        const c = await loadThroughUi(page, name);
        if (c.cachedBytes !== 0 || c.ortFromCache) throw new Error(`${name}: a cold load took files from the cache`);
        cold.push(c);
        await openPage(page, server.url);
        const w = await loadThroughUi(page, name);
        if (w.cachedBytes !== w.downloadBytes || !w.ortFromCache)
          throw new Error(`${name}: a warm load downloaded files again`);
        warm.push(w);
        log(
          `  load ${r + 1}/${repeats}: cold ${f0(c.totalMs)} ms (graphs ${f0(c.downloadMs)} + sessions ${f0(c.sessionMs)}), warm ${f0(w.totalMs)} ms`,
        );
      }
      environment = (await page.textContent('#environment')) ?? environment;

      // The page now holds the model, warm. One untimed sentence first: the first run of a session is slower.
      await translateThroughUi(page, sentences.slice(0, 1), 1, false);
      const beams: Record<string, SentenceRun[]> = {};
      for (const beam of [1, 5]) {
        beams[beam] = await translateThroughUi(page, sentences, beam, true);
        const b = stats(beams[beam].map((s) => s.browserMs));
        const sv = stats(beams[beam].map((s) => s.serverRoundTripMs));
        const same = beams[beam].filter((s) => s.browserText === s.serverText).length;
        log(
          `  beam ${beam}: browser p50 ${f1(b.p50)} ms, mean ${f1(b.mean)} ms; server round trip p50 ${f1(sv.p50)} ms; same output ${same}/${sentences.length}`,
        );
      }
      const summary = (runs: SentenceRun[]) => ({
        browser: stats(runs.map((s) => s.browserMs)),
        serverRoundTrip: stats(runs.map((s) => s.serverRoundTripMs)),
        server: stats(runs.map((s) => s.serverMs)),
        sameOutput: runs.filter((s) => s.browserText === s.serverText).length,
        /** Latency grows with the output's length: a model that repeats itself is slower per sentence. */
        meanOutputWords:
          runs.reduce((n, s) => n + (s.browserText === '' ? 0 : s.browserText.split(/\s+/).length), 0) / runs.length,
      });
      results.push({
        name,
        dir: relative(ROOT, model.dir) || '.',
        head: model.card.head.name,
        arch: `${model.card.arch}/${model.card.preset}`,
        langs: `${lang}→${model.card.target.lang}`,
        valBleu: model.card.metrics?.valBleu,
        params: model.card.params,
        downloadBytes: cold[0].downloadBytes,
        sentencesFrom: from,
        load: {
          cold: { medianMs: median(cold.map((c) => c.totalMs)), runs: cold },
          warm: { medianMs: median(warm.map((w) => w.totalMs)), runs: warm },
        },
        beam1: { ...summary(beams[1]), sentences: beams[1] },
        beam5: { ...summary(beams[5]), sentences: beams[5] },
      });
    }

    if (!args['no-screenshot']) {
      // Every model in one page; the best one (by validation BLEU) last, so its translations are shown.
      const byBleu = [...models].sort(
        (a, b) => (a.card.metrics?.valBleu ?? -Infinity) - (b.card.metrics?.valBleu ?? -Infinity),
      );
      await openPage(page, server.url);
      for (const [i, model] of byBleu.entries()) {
        await loadThroughUi(page, model.card.name);
        const { sentences } = await sentencesFor(model.card.source?.lang ?? model.card.target.lang, count);
        const last = i === byBleu.length - 1;
        await translateThroughUi(page, last ? sentences.slice(0, 6) : sentences.slice(0, 3), 5, last);
      }
      // Filling the text box leaves it scrolled to its last line; show it from the first.
      await page.getByLabel('Text, one sentence per line').evaluate((el) => el.scrollTo(0, 0));
      screenshot = resolve(args.screenshot!);
      await mkdir(dirname(screenshot), { recursive: true });
      await page.screenshot({ path: screenshot, fullPage: true });
      log(`screenshot: ${relative(ROOT, screenshot)}`);
    }
  } finally {
    await browser?.close();
    await server?.close();
  }

  const load = `1-min load average ${loadAtStart.toFixed(1)} at start, ${loadavg()[0].toFixed(1)} at end`;
  const machine = `${cpus()[0]?.model ?? 'cpu'} ×${availableParallelism()}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, onnxruntime-node ${ortNode.env.versions.node}`;
  const chromium = /Chrome\/([\d.]+)/.exec(userAgent)?.[1] ?? userAgent;
  const rows = results.map((r) => {
    const cold = r.load.cold.medianMs;
    const warm = r.load.warm.medianMs;
    const coldRun = r.load.cold.runs;
    return [
      r.name,
      r.head,
      mb(r.downloadBytes),
      `${f0(cold)} (${f0(median(coldRun.map((c) => c.downloadMs)))} + ${f0(median(coldRun.map((c) => c.sessionMs)))})`,
      `${f0(warm)}`,
      `${f1(r.beam1.browser.p50)} / ${f1(r.beam1.browser.mean)}`,
      `${f1(r.beam5.browser.p50)} / ${f1(r.beam5.browser.mean)}`,
      `${f1(r.beam1.server.p50)} / ${f1(r.beam1.serverRoundTrip.p50)}`,
      `${f1(r.beam5.server.p50)} / ${f1(r.beam5.serverRoundTrip.p50)}`,
      `${r.beam1.meanOutputWords.toFixed(1)} / ${r.beam5.meanOutputWords.toFixed(1)}`,
      `${r.beam1.sameOutput}/${r.beam1.sentences.length}, ${r.beam5.sameOutput}/${r.beam5.sentences.length}`,
    ];
  });
  const sources = [...new Set(results.map((r) => r.sentencesFrom))].join('; ');
  const markdown = [
    `Web client in headless Chromium ${chromium} (wasm backend; ${environment}), models served by \`frost serve\` on 127.0.0.1.`,
    `Machine: ${machine} (${load}); server: intra-op threads ${threads === 0 ? 'ORT default' : threads}, batching wait 0 ms.`,
    `Load: click on "Load model" → ready, median of ${repeats}; cold = Cache Storage and HTTP cache cleared (includes ONNX Runtime's wasm, downloaded and compiled), in brackets the graphs' download + session creation; warm = a fresh page, everything from Cache Storage.`,
    `Latency per sentence over ${results[0]?.beam1.sentences.length ?? count} sentences (${sources}), one at a time: p50 / mean in the browser; server = its own \`timing.total_ms\` p50 / round trip from the page p50.`,
    '',
    '| model | head | download | cold load ms | warm load ms | browser beam 1 ms | browser beam 5 ms | server beam 1 ms | server beam 5 ms | output words (b1 / b5) | same output (b1, b5) |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map((cells) => `| ${cells.join(' | ')} |`),
    '',
    `Command: \`npm run bench:web -- --models ${relative(ROOT, modelsDir) || '.'}\` (${((Date.now() - started) / 60000).toFixed(1)} min wall).`,
  ].join('\n');

  await mkdir(args.out!, { recursive: true });
  const report = {
    machine,
    load,
    chromium: userAgent,
    environment,
    threads,
    repeats,
    screenshot: screenshot && relative(ROOT, screenshot),
    models: results,
  };
  await writeFile(join(args.out!, 'web-load.json'), `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(join(args.out!, 'web-load.md'), `${markdown}\n`);
  log(`\n${markdown}\n\nwrote web-load.json and web-load.md in ${relative(ROOT, resolve(args.out!)) || '.'}`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench/web-load: ${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
