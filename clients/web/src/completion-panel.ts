/**
 * The Complete section, shown instead of Translate while the model in use is a language model (its
 * card says `task: 'lm'`). It runs the same `LmRuntime` as `POST /v1/complete` (core/runtime/lm.ts),
 * here on onnxruntime-web: greedy, or sampled with a temperature, top-k, top-p and a seed, so a seed
 * gives the page the completion the server gives. Tokens appear as they are generated.
 */
import { cardTextFamily } from '../../../core/runtime/card-kinds.ts';
import { LmRuntime } from '../../../core/runtime/lm.ts';
import { parseLmCard } from '../../../core/runtime/lm-card.ts';
import { MODEL_CARD_FILE } from '../../../core/runtime/model-card.ts';
import { byId } from './dom.ts';
import type { ProgressListener } from './download.ts';
import { cachedFetch } from './file-cache.ts';
import { formatMs } from './format.ts';
import type { OrtSetup } from './ort-loader.ts';

export type CompletionPanelState = 'loading' | 'completing' | 'ready' | 'error';

/** Whether the folder's card is a language model's (a cheap look before loading anything). */
export async function isLanguageModelFolder(folder: string): Promise<boolean> {
  const response = await fetch(new URL(MODEL_CARD_FILE, folder), { cache: 'no-cache' });
  if (!response.ok) return false;
  return cardTextFamily(await response.text()) === 'lm';
}

/** Loads a language model folder's card and step graph into an LmRuntime on onnxruntime-web. */
export async function loadLanguageModel(
  folder: string,
  setup: OrtSetup,
  onProgress: ProgressListener,
): Promise<LmRuntime> {
  const cardUrl = new URL(MODEL_CARD_FILE, folder).href;
  const response = await fetch(cardUrl, { cache: 'no-cache' });
  if (!response.ok) throw new Error(`${cardUrl}: HTTP ${response.status} ${response.statusText}`);
  const card = parseLmCard(await response.text(), cardUrl);
  const inside = (file: string) => {
    const url = new URL(file, folder);
    if (file === '' || !url.href.startsWith(folder))
      throw new Error(`${cardUrl}: file '${file}' must name a file inside the model folder`);
    return url.href;
  };
  const stepFile = card.graphs.step.file;
  const step = await cachedFetch(
    inside(stepFile),
    `${card.name}@${card.created}`,
    onProgress,
    card.files[stepFile]?.bytes,
  );
  return LmRuntime.create({
    ort: setup.ort,
    card,
    step: step.bytes,
    sessionOptions: { executionProviders: [setup.backend], graphOptimizationLevel: 'all' },
    locate: (file) => new URL(file, folder).href,
    files: async (file) => {
      const got = await fetch(inside(file), { cache: 'no-cache' });
      if (!got.ok) throw new Error(`HTTP ${got.status} ${got.statusText}`);
      return new Uint8Array(await got.arrayBuffer());
    },
  });
}

export class CompletionPanel {
  private readonly section = byId('complete-section', HTMLElement);
  private readonly form = byId('complete-form', HTMLFormElement);
  private readonly prompt = byId('prompt', HTMLTextAreaElement);
  private readonly maxTokens = byId('max-new-tokens', HTMLInputElement);
  private readonly temperature = byId('temperature', HTMLInputElement);
  private readonly topP = byId('top-p', HTMLInputElement);
  private readonly seed = byId('seed', HTMLInputElement);
  private readonly button = byId('complete', HTMLButtonElement);
  private readonly output = byId('completion', HTMLOutputElement);
  private runtime: LmRuntime | undefined;

  constructor(private readonly report: (state: CompletionPanelState, message: string) => void) {
    this.form.addEventListener('submit', (e) => {
      e.preventDefault();
      if (!this.form.reportValidity()) return;
      void this.complete();
    });
  }

  /** Shows the panel with `runtime`, or hides it (undefined: the model in use is not a language model). */
  use(runtime: LmRuntime | undefined): void {
    this.runtime = runtime;
    this.section.hidden = runtime === undefined;
  }

  setBusy(busy: boolean): void {
    this.button.disabled = busy || !this.runtime;
  }

  private async complete(): Promise<void> {
    const runtime = this.runtime;
    if (!runtime) return;
    const text = this.prompt.value.trim();
    if (!text) {
      this.report('error', 'Type the beginning of a text to complete.');
      return;
    }
    // Temperature 0 is greedy; otherwise the draws are seeded, as on the server.
    const temperature = Number(this.temperature.value);
    const sampling =
      temperature > 0 ? { temperature, topP: Number(this.topP.value), seed: Number(this.seed.value) } : {};
    this.output.value = '';
    this.output.dataset.text = '';
    this.report('completing', 'Completing…');
    const t0 = performance.now();
    try {
      const tokens: string[] = [];
      const c = await runtime.complete(text, {
        ...sampling,
        maxNewTokens: Number(this.maxTokens.value),
        onToken: (token) => {
          tokens.push(token);
          this.output.value = tokens.join(' ');
        },
      });
      this.output.value = c.text;
      this.output.dataset.text = c.text;
      this.output.dataset.finish = c.finishReason;
      this.report(
        'ready',
        `Completed ${c.tokens.length} tokens (${c.finishReason}) in ${formatMs(performance.now() - t0)}.`,
      );
    } catch (err) {
      console.error(err);
      this.report('error', (err as Error).message);
    }
  }
}
