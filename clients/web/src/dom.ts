/** Small DOM helpers: typed lookups that fail loudly, and element building without innerHTML. */

/**
 * The element with `id`, checked to be a `type`.
 * @throws Error when the page lacks it, which means index.html and the code disagree
 */
export function byId<T extends HTMLElement>(id: string, type: { new (): T; prototype: T }): T {
  const el = document.getElementById(id);
  if (!(el instanceof type)) throw new Error(`index.html has no <${type.name}> #${id}`);
  return el;
}

/** A new element with a class and children; text is set as text, never parsed as HTML. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: { className?: string; title?: string } = {},
  ...children: Array<Node | string>
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (props.className) el.className = props.className;
  if (props.title) el.title = props.title;
  el.append(...children);
  return el;
}
