/**
 * The page's entry point: wires the forms to model loading and translation; captioning lives in
 * caption-panel.ts, shown in place of the translation form when the model is a caption model.
 * Everything heavy (ONNX Runtime, the model) is loaded on demand when the user asks for a model.
 *
 * `document.body.dataset.state` tracks what the page is doing (starting, idle, loading, ready,
 * translating, captioning, error), for tests and for styling.
 */
import { CaptionPanel } from './caption-panel.ts';
import { CompletionPanel, isLanguageModelFolder, loadLanguageModel } from './completion-panel.ts';
import { byId } from './dom.ts';
import { clearFileCache } from './file-cache.ts';
import { formatBytes } from './format.ts';
import { loadModel, normaliseFolder, type LoadedModel } from './load-model.ts';
import { renderModels } from './models-table.ts';
import { describeBackend, loadOrt, webGpuAvailable, wasmThreads, type BackendChoice } from './ort-loader.ts';
import { ProgressBar } from './progress-bar.ts';
import { renderResults, showServerColumns, type ResultRow } from './results-table.ts';
import { listServerModels, serverModelFolder, translateOnServer, type ServerModels } from './server-api.ts';
import { sampleFor } from './sample-sentences.ts';

const ui = {
  environment: byId('environment', HTMLParagraphElement),
  modelForm: byId('model-form', HTMLFormElement),
  modelSelect: byId('model-select', HTMLSelectElement),
  modelUrl: byId('model-url', HTMLInputElement),
  backend: byId('backend', HTMLSelectElement),
  load: byId('load', HTMLButtonElement),
  translateSection: byId('translate-section', HTMLElement),
  translateForm: byId('translate-form', HTMLFormElement),
  source: byId('source', HTMLTextAreaElement),
  beam: byId('beam', HTMLInputElement),
  compare: byId('compare', HTMLInputElement),
  translate: byId('translate', HTMLButtonElement),
  status: byId('status', HTMLParagraphElement),
  clearCache: byId('clear-cache', HTMLButtonElement),
};

type PageState = 'starting' | 'idle' | 'loading' | 'ready' | 'translating' | 'captioning' | 'completing' | 'error';

/** The page's base: API and asset URLs are relative to it, so the page works under any mount point. */
const base = document.baseURI;
const ortBase = new URL('ort/', base);
const progress = new ProgressBar();
/** Loaded models by folder URL and backend, in load order. */
const loaded = new Map<string, LoadedModel>();
let active: LoadedModel | undefined;
let server: ServerModels | undefined;
/** Environment facts shown in the header; the ORT part is filled in once a runtime is loaded. */
const environment = { isolated: globalThis.crossOriginIsolated === true, webgpu: false, runtime: '' };
const captionPanel = new CaptionPanel((state, message) => {
  // A finished caption adds a latency to the models table.
  if (state !== 'captioning') renderModels([...loaded.values()], active);
  setState(state, message);
});

const completionPanel = new CompletionPanel((state, message) => setState(state, message));

function setState(state: PageState, message = ''): void {
  document.body.dataset.state = state;
  ui.status.textContent = message;
  ui.status.classList.toggle('error', state === 'error');
  const busy =
    state === 'loading' ||
    state === 'translating' ||
    state === 'captioning' ||
    state === 'completing' ||
    state === 'starting';
  ui.load.disabled = busy;
  ui.translate.disabled = busy || !active;
  captionPanel.setBusy(busy);
  completionPanel.setBusy(busy);
}

function showEnvironment(): void {
  const parts = [
    environment.isolated
      ? `cross-origin isolated, wasm threads: ${wasmThreads()}`
      : 'not cross-origin isolated: wasm runs single-threaded',
    `WebGPU: ${environment.webgpu ? 'available' : 'not available'}`,
  ];
  if (environment.runtime) parts.push(environment.runtime);
  ui.environment.textContent = parts.join(' · ');
}

async function start(): Promise<void> {
  environment.webgpu = await webGpuAvailable();
  showEnvironment();
  if (!environment.webgpu) {
    const option = ui.backend.querySelector<HTMLOptionElement>('option[value="webgpu"]');
    if (option) {
      option.disabled = true;
      option.textContent = 'WebGPU (not available here)';
    }
  }
  server = await listServerModels(base);
  if (server && server.models.length + (server.language_models?.length ?? 0) > 0) {
    for (const m of server.language_models ?? [])
      ui.modelSelect.add(
        new Option(
          `${m.name} (${m.target.lang} language model, ${m.head.name} head)`,
          m.name,
          false,
          m.name === server.default_language_model && !server.default,
        ),
      );
    for (const m of server.models) {
      const lang = `${m.task === 'caption' ? 'image' : (m.source?.lang ?? m.target.lang)}→${m.target.lang}`;
      ui.modelSelect.add(
        new Option(`${m.name} (${lang}, ${m.head.name} head)`, m.name, false, m.name === server.default),
      );
    }
  } else {
    ui.modelSelect.add(new Option('none: enter a model folder URL', ''));
    ui.modelSelect.disabled = true;
    ui.compare.disabled = true;
  }
  // ?model=<folder URL> loads that folder straight away (a shareable link to a model).
  const fromQuery = new URLSearchParams(location.search).get('model');
  setState('idle', server ? '' : 'No frost server behind this page: give a model folder URL.');
  if (fromQuery) {
    ui.modelUrl.value = fromQuery;
    await onLoad();
  }
}

async function onLoad(): Promise<void> {
  const url = ui.modelUrl.value.trim();
  if (!url && !ui.modelSelect.value) {
    setState('error', 'Choose a model or give a model folder URL.');
    return;
  }
  setState('loading', 'Loading ONNX Runtime…');
  try {
    // A relative folder (`../models/de-en/`) is resolved against the page.
    const folder = url ? normaliseFolder(url, base) : serverModelFolder(ui.modelSelect.value, base);
    const setup = await loadOrt(ui.backend.value as BackendChoice, ortBase, progress.start('ONNX Runtime'));
    environment.runtime = `ONNX Runtime Web ${setup.ort.env.versions.web ?? ''} (${formatBytes(setup.wasmBytes)}${setup.wasmFromCache ? ', cached' : ''})`;
    showEnvironment();
    if (await isLanguageModelFolder(folder)) {
      setState('loading', `Loading ${folder}…`);
      const lm = await loadLanguageModel(folder, setup, progress.start('Model'));
      progress.hide();
      active = undefined;
      ui.translateSection.hidden = true;
      captionPanel.use(undefined);
      completionPanel.use(lm);
      setState('ready', `${lm.card.name} is loaded and runs on ${describeBackend(setup)}.`);
      return;
    }
    completionPanel.use(undefined);
    const key = `${setup.backend} ${folder}`;
    let model = loaded.get(key);
    if (!model) {
      setState('loading', `Loading ${folder}…`);
      model = await loadModel(folder, setup, progress.start('Model'));
      loaded.set(key, model);
    }
    active = model;
    progress.hide();
    // Each task has its own form; only the one the model can do is shown.
    ui.translateSection.hidden = model.captioner !== undefined;
    ui.source.value = sampleFor(model.card.source?.lang, ui.source.value);
    captionPanel.use(model);
    renderModels([...loaded.values()], active);
    setState('ready', `${model.card.name} is loaded and runs on ${describeBackend(model)}.`);
  } catch (err) {
    progress.hide();
    console.error(err);
    setState('error', (err as Error).message);
  }
}

async function onTranslate(): Promise<void> {
  const model = active;
  if (!model) return;
  const sentences = ui.source.value
    .split('\n')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (sentences.length === 0) {
    setState('error', 'Type a sentence to translate.');
    return;
  }
  const beam = Number(ui.beam.value);
  const compare = ui.compare.checked;
  const onServer = compare && server?.models.some((m) => m.name === model.card.name);
  showServerColumns(compare);
  setState('translating', 'Translating…');
  const rows: ResultRow[] = [];
  try {
    for (const source of sentences) {
      // One sentence per call, so each latency is a sentence's, as a user typing one would see it.
      const t0 = performance.now();
      const [translation] = await model.runtime.translate([source], { beam });
      const ms = performance.now() - t0;
      model.latencies.push(ms);
      const row: ResultRow = { source, browser: { text: translation.text, ms } };
      if (compare) {
        row.server = onServer
          ? await translateOnServer(base, model.card.name, source, beam).catch((err: Error) => err)
          : new Error(`the server has no model named '${model.card.name}'`);
      }
      rows.push(row);
      renderResults(rows);
    }
    renderModels([...loaded.values()], active);
    setState('ready', `Translated ${rows.length} sentence${rows.length === 1 ? '' : 's'} with beam ${beam}.`);
  } catch (err) {
    console.error(err);
    setState('error', (err as Error).message);
  }
}

ui.modelForm.addEventListener('submit', (e) => {
  e.preventDefault();
  void onLoad();
});
ui.translateForm.addEventListener('submit', (e) => {
  e.preventDefault();
  if (!ui.translateForm.reportValidity()) return;
  void onTranslate();
});
ui.compare.addEventListener('change', () => showServerColumns(ui.compare.checked));
ui.clearCache.addEventListener('click', () => {
  // Models already loaded stay usable; the next load downloads again.
  void clearFileCache().then(() => {
    ui.status.textContent = 'Cache cleared.';
  });
});

start().catch((err: unknown) => {
  console.error(err);
  setState('error', (err as Error).message);
});
