// htm bound to preact: tagged templates instead of JSX, so the panel needs no JSX build step.
import { h } from 'preact';
import htm from 'htm';

export const html = htm.bind(h);

/** A table's header row; an empty name is an actions column, named for screen readers only. */
export function Head({ cols }: { cols: string[] }) {
  return html`<thead>
    <tr>
      ${cols.map((c) => html`<th scope="col">${c || html`<span class="sr-only">Actions</span>`}</th>`)}
    </tr>
  </thead>`;
}

/** The error line of a page or form: nothing while there is no error. */
export function Alert({ text }: { text: string }) {
  return text ? html`<p role="alert" class="error">${text}</p>` : null;
}
