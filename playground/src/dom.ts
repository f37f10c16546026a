/**
 * The page's only rendering helper: builds elements with text nodes and attributes, never
 * from HTML strings, so nothing a workflow returns can become markup (and the CSP forbids
 * inline script and style anyway).
 */
type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;

/** `h('a', { href, onclick }, 'text', child)`: `on*` keys become listeners, `true` an empty attribute, false/null nothing. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (typeof value === 'function') el.addEventListener(name.slice(2), value);
    else if (value === true) el.setAttribute(name, '');
    else if (value !== false && value !== null && value !== undefined)
      el.setAttribute(name, String(value));
  }
  el.append(
    ...children
      .filter((c): c is Node | string | number => c !== null && c !== undefined && c !== false)
      .map((c) => (typeof c === 'number' ? String(c) : c)),
  );
  return el;
}

/** The element with this id (the page's fixed skeleton in index.html). */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} is missing from the page`);
  return el as T;
}

/** Shows or hides an element and sets its text. */
export function say(el: HTMLElement, text: string): void {
  el.textContent = text;
  el.hidden = text === '';
}
