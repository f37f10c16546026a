/**
 * Renders a run's record: each output key's items, each part by its type (text, pretty JSON,
 * images and video inline through their signed links, other files as downloads), and failed
 * items in place with their error.
 */
import type { Part } from '../../domain/parts';
import type { Run } from '../../clients/typescript';
import { h } from './dom';

function renderPart(part: Part, label: string): HTMLElement {
  switch (part.type) {
    case 'text':
      return h('pre', { class: 'part text' }, part.text ?? '');
    case 'json':
      return h('pre', { class: 'part json' }, JSON.stringify(part.data, null, 2));
    case 'image':
      return h(
        'a',
        { class: 'part media', href: part.url, target: '_blank', rel: 'noopener' },
        h('img', { src: part.url, alt: part.name ?? label, loading: 'lazy' }),
      );
    case 'video':
      return h('video', {
        class: 'part media',
        src: part.url,
        controls: true,
        preload: 'metadata',
        'aria-label': part.name ?? label,
      });
    default:
      return h(
        'a',
        { class: 'part file', href: part.url, download: part.name ?? '' },
        `Download ${part.name ?? 'file'}`,
        part.mime_type ? h('span', { class: 'muted' }, ` (${part.mime_type})`) : null,
      );
  }
}

/**
 * The outputs (or the run's error) in `container`; `labels` maps output keys to their labels.
 * Each output with items offers its results file as CSV (`onCsv(key)`).
 */
export function renderRun(
  container: HTMLElement,
  run: Run,
  labels: Map<string, string>,
  onCsv: (key: string) => void,
): void {
  container.replaceChildren();
  if (run.status === 'failed')
    container.append(
      h(
        'div',
        { class: 'alert bad', role: 'alert' },
        h('strong', {}, 'Run failed: '),
        run.error ?? 'no reason given',
      ),
    );
  if (run.status === 'cancelled')
    container.append(h('div', { class: 'alert' }, 'The run was cancelled.'));
  for (const [key, items] of Object.entries(run.output ?? {})) {
    const label = labels.get(key) ?? key;
    container.append(
      h(
        'section',
        { class: 'output', 'aria-label': label },
        h(
          'h3',
          {},
          label,
          h('code', { class: 'key' }, key),
          items.length > 0
            ? h(
                'button',
                {
                  type: 'button',
                  class: 'small download',
                  title: 'Every item of this output as a CSV file',
                  onclick: () => onCsv(key),
                },
                'Download CSV',
              )
            : null,
        ),
        ...(items.length === 0 ? [h('p', { class: 'muted' }, 'No items.')] : []),
        ...items.map((item) =>
          h(
            'div',
            { class: `item ${item.status}`, 'data-item': item.id },
            items.length > 1 ? h('span', { class: 'item-index' }, `#${item.item_index + 1}`) : null,
            item.status === 'failed'
              ? h(
                  'p',
                  { class: 'item-error', role: 'note' },
                  h('strong', {}, 'Failed: '),
                  item.error?.message ?? 'unknown error',
                )
              : null,
            ...item.parts.map((part) => renderPart(part, label)),
          ),
        ),
      ),
    );
  }
  const facts = [
    run.total_cost !== null ? `cost $${run.total_cost.toFixed(4)}` : '',
    run.created_at && run.completed_at
      ? `${((Date.parse(run.completed_at) - Date.parse(run.created_at)) / 1000).toFixed(2)} s`
      : '',
  ].filter(Boolean);
  if (facts.length) container.append(h('p', { class: 'muted small' }, facts.join(' · ')));
}
