/**
 * The Caption section, shown instead of Translate while the model in use is a caption model (its
 * card says `task: 'caption'`). A picked or dropped JPEG or PNG goes through the same steps as on
 * the server and in `frost caption`: decode to RGBA (image-input.ts, the browser's counterpart of
 * core/image/decode-node.ts), `preprocessRgba` with the card's image spec, and `CaptionRuntime`'s
 * beam search, here on onnxruntime-web. Nothing leaves the page.
 */
import { preprocessRgba } from '../../../core/image/preprocess.ts';
import { DEFAULT_CAPTION_BEAM } from '../../../core/runtime/caption.ts';
import { byId, h } from './dom.ts';
import { formatMs } from './format.ts';
import { decodeImageInBrowser } from './image-input.ts';
import type { LoadedModel } from './load-model.ts';

/** What the panel tells the page: busy captioning, done, or failed (the message says why). */
export type CaptionPanelState = 'captioning' | 'ready' | 'error';

/** One captioned image as the table shows it. */
interface CaptionRow {
  file: File;
  text: string;
  /** Decode, preprocessing and search, as the user waits for them. */
  ms: number;
  model: string;
  beam: number;
}

export class CaptionPanel {
  private readonly section = byId('caption-section', HTMLElement);
  private readonly dropZone = byId('drop-zone', HTMLDivElement);
  private readonly input = byId('image-file', HTMLInputElement);
  private readonly beam = byId('caption-beam', HTMLInputElement);
  private readonly rows = byId('captions', HTMLTableElement).tBodies[0];
  private model: LoadedModel | undefined;
  private busy = false;
  private readonly report: (state: CaptionPanelState, message: string) => void;

  /** @param report called when captioning starts, ends or fails; the page shows it in its status line */
  constructor(report: (state: CaptionPanelState, message: string) => void) {
    this.report = report;
    this.beam.value = String(DEFAULT_CAPTION_BEAM);
    this.input.addEventListener('change', () => {
      void this.captionFiles(Array.from(this.input.files ?? []));
    });
    // The whole section takes drops, so a near miss does not make the browser open the image instead.
    this.section.addEventListener('dragover', (e) => {
      e.preventDefault();
      if (e.dataTransfer) e.dataTransfer.dropEffect = this.accepting() ? 'copy' : 'none';
      this.dropZone.classList.toggle('dragging', this.accepting());
    });
    this.section.addEventListener('dragleave', (e) => {
      if (!this.section.contains(e.relatedTarget as Node | null)) this.dropZone.classList.remove('dragging');
    });
    this.section.addEventListener('drop', (e) => {
      e.preventDefault();
      this.dropZone.classList.remove('dragging');
      void this.captionFiles(Array.from(e.dataTransfer?.files ?? []));
    });
  }

  /** Shows the panel when `model` captions, hides it otherwise. */
  use(model: LoadedModel | undefined): void {
    this.model = model;
    this.section.hidden = model?.captioner === undefined;
    this.setBusy(this.busy);
  }

  /** Disables the inputs while the page is busy (loading a model, captioning). */
  setBusy(busy: boolean): void {
    this.busy = busy;
    this.input.disabled = !this.accepting();
    this.beam.disabled = busy;
  }

  private accepting(): boolean {
    return !this.busy && this.model?.captioner !== undefined;
  }

  /** Captions the files one at a time, adding a row for each; the first bad file stops the rest. */
  private async captionFiles(files: File[]): Promise<void> {
    const model = this.model;
    const captioner = model?.captioner;
    if (!model || !captioner || !this.accepting() || files.length === 0) return;
    if (!this.beam.reportValidity()) return;
    const beam = Number(this.beam.value);
    this.report('captioning', `Captioning ${files.length === 1 ? files[0].name : `${files.length} images`}…`);
    let done = 0;
    try {
      for (const file of files) {
        const t0 = performance.now();
        const image = await decodeImageInBrowser(file);
        const pixels = preprocessRgba(image.rgba, image.width, image.height, captioner.imageSpec);
        const [caption] = await captioner.caption([pixels], { beam });
        const ms = performance.now() - t0;
        model.latencies.push(ms);
        this.rows.append(captionRow({ file, text: caption.text, ms, model: model.card.name, beam }));
        done++;
      }
      this.report('ready', `Captioned ${done} image${done === 1 ? '' : 's'} with beam ${beam}.`);
    } catch (err) {
      console.error(err);
      // decodeImageInBrowser's errors already start with the file's name.
      this.report('error', (err as Error).message);
    } finally {
      // Cleared so that picking the same file again fires 'change' again.
      this.input.value = '';
    }
  }
}

function captionRow(r: CaptionRow): HTMLTableRowElement {
  const img = h('img', { className: 'thumb' });
  img.alt = r.file.name;
  const url = URL.createObjectURL(r.file);
  // The <img> keeps its decoded pixels once loaded, so the blob can be let go.
  img.addEventListener('load', () => URL.revokeObjectURL(url), { once: true });
  img.addEventListener('error', () => URL.revokeObjectURL(url), { once: true });
  img.src = url;
  const text = h(
    'td',
    { className: 'output caption-text' },
    r.text === '' ? h('span', { className: 'muted empty-output' }, '(empty caption)') : r.text,
    h('span', { className: 'sub' }, `${r.model}, beam ${r.beam}`),
  );
  text.dataset.text = r.text; // the exact caption, whatever the cell shows
  const ms = h('td', { className: 'num caption-ms', title: 'decode, preprocess and caption' }, formatMs(r.ms));
  ms.dataset.ms = String(r.ms);
  return h('tr', {}, h('td', { className: 'image' }, img, h('span', { className: 'sub' }, r.file.name)), text, ms);
}
