/** The "models loaded in this page" table: one row per model, with what the card says and what loading cost. */
import { byId, h } from './dom.ts';
import { formatBytes, formatCount, formatMs } from './format.ts';
import type { LoadedModel } from './load-model.ts';
import { describeBackend } from './ort-loader.ts';

/** Redraws the table; `active` is the model translations use. */
export function renderModels(models: readonly LoadedModel[], active: LoadedModel | undefined): void {
  const body = byId('models', HTMLTableElement).tBodies[0];
  if (models.length === 0) return;
  body.replaceChildren(...models.map((m) => modelRow(m, m === active)));
}

function modelRow(m: LoadedModel, active: boolean): HTMLTableRowElement {
  const { card } = m;
  // A caption model reads images (its card has no source vocabulary), so only its words are counted.
  const captions = card.task === 'caption';
  const langs = `${captions ? 'image' : (card.source?.lang ?? card.target.lang)} → ${card.target.lang}`;
  const vocab = captions
    ? `${card.image ? `${card.image.size}² pixels / ` : ''}${formatCount(card.target.tokens.length)} words`
    : `${formatCount(card.source?.tokens.length ?? card.target.tokens.length)} / ${formatCount(card.target.tokens.length)} words`;
  const unit = captions ? 'image' : 'sentence';
  const { learnable, frozen, generated } = card.params;
  const latency = m.latencies.length ? formatMs(m.latencies.reduce((a, b) => a + b, 0) / m.latencies.length) : '–';
  const row = h(
    'tr',
    {},
    h(
      'td',
      {},
      h('span', { className: 'name' }, card.name),
      h('span', { className: 'sub' }, `${card.arch} · ${card.preset}`),
    ),
    h('td', {}, langs, h('span', { className: 'sub' }, vocab)),
    h('td', { className: 'head' }, h('code', {}, card.head.name)),
    h('td', { className: 'num learnable' }, formatCount(learnable)),
    h(
      'td',
      { className: 'num frozen' },
      formatCount(frozen),
      // Generated parameters are frozen ones the graph rebuilds from a seed: they cost no download.
      generated > 0 ? h('span', { className: 'sub' }, `${formatCount(generated)} regenerated`) : '',
    ),
    h(
      'td',
      { className: 'num download' },
      formatBytes(m.downloadBytes),
      h('span', { className: 'sub' }, m.cachedBytes === m.downloadBytes ? 'from cache' : formatMs(m.downloadMs)),
    ),
    h('td', { className: 'num load' }, formatMs(m.loadMs)),
    h(
      'td',
      { className: 'num latency' },
      latency,
      h('span', { className: 'sub' }, `${m.latencies.length} ${unit}${m.latencies.length === 1 ? '' : 's'}`),
    ),
    h(
      'td',
      { className: 'backend' },
      describeBackend(m),
      active ? h('span', { className: 'sub' }, h('span', { className: 'badge' }, 'in use')) : '',
    ),
  );
  if (active) row.setAttribute('aria-current', 'true');
  // The unrounded figures, for scripts (bench/web-load.ts) that read the table.
  Object.assign(row.dataset, {
    model: card.name,
    downloadBytes: String(m.downloadBytes),
    cachedBytes: String(m.cachedBytes),
    downloadMs: String(m.downloadMs),
    loadMs: String(m.loadMs),
  });
  return row;
}
