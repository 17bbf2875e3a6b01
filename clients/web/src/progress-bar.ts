/** The download progress bar: a labelled <progress> plus a "3.1 MB of 14.2 MB" line. */
import { byId } from './dom.ts';
import type { ProgressListener } from './download.ts';
import { formatBytes } from './format.ts';

export class ProgressBar {
  private readonly row = byId('progress', HTMLDivElement);
  private readonly label = byId('progress-label', HTMLLabelElement);
  private readonly bar = byId('download-progress', HTMLProgressElement);
  private readonly text = byId('progress-text', HTMLSpanElement);

  /** Shows the bar for a new download and returns the listener that moves it. */
  start(what: string): ProgressListener {
    this.row.hidden = false;
    this.label.textContent = what;
    this.bar.value = 0;
    this.text.textContent = '';
    return (loaded, total) => {
      if (total) {
        this.bar.max = total;
        this.bar.value = Math.min(loaded, total);
        this.text.textContent = `${formatBytes(loaded)} of ${formatBytes(total)}`;
      } else {
        // Unknown size: an indeterminate bar (no value attribute) and the bytes so far.
        this.bar.removeAttribute('value');
        this.text.textContent = formatBytes(loaded);
      }
    };
  }

  hide(): void {
    this.row.hidden = true;
  }
}
