/** The translations table: one row per sentence, browser output beside the server's when comparing. */
import { byId, h } from './dom.ts';
import { formatMs } from './format.ts';
import type { ServerTranslation } from './server-api.ts';

/** One translated sentence. */
export interface ResultRow {
  source: string;
  browser: { text: string; ms: number };
  /** Absent when not comparing; an Error when the server refused or is not there. */
  server?: ServerTranslation | Error;
}

const table = (): HTMLTableElement => byId('results', HTMLTableElement);

/** Shows or hides the server columns. */
export function showServerColumns(show: boolean): void {
  table().classList.toggle('with-server', show);
}

/** Replaces the table's rows. */
export function renderResults(rows: readonly ResultRow[]): void {
  table().tBodies[0].replaceChildren(...rows.map(resultRow));
}

function resultRow(r: ResultRow): HTMLTableRowElement {
  const ms = h('td', { className: 'num browser-ms' }, formatMs(r.browser.ms));
  ms.dataset.ms = String(r.browser.ms); // unrounded, for scripts that read the table
  return h(
    'tr',
    {},
    h('td', { className: 'source' }, r.source),
    outputCell('output browser-text', r.browser.text),
    ms,
    ...serverCells(r),
  );
}

function serverCells(r: ResultRow): HTMLTableCellElement[] {
  const s = r.server;
  if (s === undefined) {
    return [
      h('td', { className: 'server server-text muted' }, '–'),
      h('td', { className: 'num server server-ms' }, ''),
    ];
  }
  if (s instanceof Error) {
    return [
      h('td', { className: 'server server-text mismatch' }, s.message),
      h('td', { className: 'num server server-ms' }, ''),
    ];
  }
  const same = s.text === r.browser.text;
  const ms = h(
    'td',
    { className: 'num server server-ms', title: 'round trip; the server’s own time below' },
    formatMs(s.roundTripMs),
    h('span', { className: 'sub' }, `server ${formatMs(s.serverMs)}`),
  );
  Object.assign(ms.dataset, { ms: String(s.roundTripMs), serverMs: String(s.serverMs) });
  return [
    outputCell(
      'output server server-text',
      s.text,
      h(
        'span',
        { className: `sub ${same ? 'match' : 'mismatch'}` },
        same ? '✓ same as in the browser' : '≠ differs from the browser',
      ),
    ),
    ms,
  ];
}

/** A translation's cell; an empty translation (the model emitted </s> at once) is said so, not left blank. */
function outputCell(className: string, text: string, ...after: Node[]): HTMLTableCellElement {
  const shown = text === '' ? h('span', { className: 'muted empty-output' }, '(empty translation)') : text;
  const cell = h('td', { className }, shown, ...after);
  cell.dataset.text = text; // the exact output, whatever the cell shows
  return cell;
}
