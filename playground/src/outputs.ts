/**
 * Renders a run's record: each output key's items, each part by its type (text, pretty JSON,
 * images and video inline through their signed links, other files as downloads), and failed
 * items in place with their error.
 */
import type { Part } from '../../domain/parts';
import type { OutputItem, Run } from '../../clients/typescript';
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

/** A page of an output's items, and whether more follow (D31). */
export interface OutputPage {
  items: OutputItem[];
  hasMore: boolean;
}

/** One output of a run as the page shows it: its first page (D31). */
export interface ShownOutput extends OutputPage {
  key: string;
  label: string;
}

/** What the output sections ask of the page: an output's results file, and its next page. */
export interface OutputActions {
  onCsv(key: string): void;
  /** The items after `afterId` and whether more follow; the section appends them. */
  more(key: string, afterId: string): Promise<OutputPage>;
}

/**
 * The run's error (if any) and its outputs in `container`. Items come a page at a time, never the
 * whole run (a big run's output can be a million items, D31): a section shows its first page and
 * a button for the next; each offers its results file as CSV. A run that failed or was cancelled
 * shows the outputs it finished items of (D36); a completed one every output, empty ones too.
 */
export function renderRun(
  container: HTMLElement,
  run: Run,
  outputs: ShownOutput[],
  actions: OutputActions,
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
  for (const output of outputs) {
    if (output.items.length === 0 && run.status !== 'completed') continue;
    container.append(outputSection(output, actions));
  }
  const facts = [
    run.total_cost !== null ? `cost $${run.total_cost.toFixed(4)}` : '',
    run.created_at && run.completed_at
      ? `${((Date.parse(run.completed_at) - Date.parse(run.created_at)) / 1000).toFixed(2)} s`
      : '',
  ].filter(Boolean);
  if (facts.length) container.append(h('p', { class: 'muted small' }, facts.join(' · ')));
}

/** An output's section: its heading with the CSV download, its items, and a button for more. */
function outputSection(output: ShownOutput, actions: OutputActions): HTMLElement {
  const { key, label } = output;
  const list = h('div', { class: 'items' });
  const section = h(
    'section',
    { class: 'output', 'aria-label': label },
    h(
      'h3',
      {},
      label,
      h('code', { class: 'key' }, key),
      output.items.length > 0
        ? h(
            'button',
            {
              type: 'button',
              class: 'small download',
              title: 'Every item of this output as a CSV file',
              onclick: () => actions.onCsv(key),
            },
            'Download CSV',
          )
        : null,
    ),
    list,
  );
  if (output.items.length === 0) list.append(h('p', { class: 'muted' }, 'No items.'));
  let last = output.items.at(-1)?.id;
  const several = output.items.length > 1 || output.hasMore;
  list.append(...output.items.map((item) => itemView(item, label, several)));
  if (output.hasMore) {
    const more: HTMLButtonElement = h(
      'button',
      {
        type: 'button',
        class: 'small more',
        onclick: async () => {
          more.disabled = true;
          try {
            const page = await actions.more(key, last!);
            list.append(...page.items.map((item) => itemView(item, label, true)));
            last = page.items.at(-1)?.id ?? last;
            if (page.hasMore) more.disabled = false;
            else more.remove();
          } catch (err) {
            more.disabled = false;
            more.after(h('p', { class: 'muted small', role: 'alert' }, (err as Error).message));
          }
        },
      },
      'Show more items',
    );
    section.append(more);
  }
  return section;
}

/** One item: its row's number when the output has several, a failed item's error, its parts. */
function itemView(item: OutputItem, label: string, numbered: boolean): HTMLElement {
  return h(
    'div',
    { class: `item ${item.status}`, 'data-item': item.id },
    numbered ? h('span', { class: 'item-index' }, `#${item.item_index + 1}`) : null,
    item.status === 'failed'
      ? h(
          'p',
          { class: 'item-error', role: 'note' },
          h('strong', {}, 'Failed: '),
          item.error?.message ?? 'unknown error',
        )
      : null,
    ...item.parts.map((part) => renderPart(part, label)),
  );
}
