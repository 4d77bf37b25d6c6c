// A bar chart in SVG (no chart library): one bar per point, the largest value at full height, with a text summary
// for screen readers.
import { html } from './html.js';

export interface Point {
  label: string;
  value: number;
}

export function BarChart({ points, title, unit = '' }: { points: Point[]; title: string; unit?: string }) {
  const max = Math.max(1, ...points.map((p) => p.value));
  const w = 600;
  const h = 120;
  const bw = points.length ? w / points.length : w;
  const total = points.reduce((s, p) => s + p.value, 0);
  return html`<figure class="chart">
    <figcaption>${title}: ${total.toLocaleString()}${unit} in all</figcaption>
    <svg viewBox="0 0 ${w} ${h + 16}" role="img" aria-label="${title}, ${points.length} bars, largest ${max}${unit}">
      ${points.map(
        (p, i) =>
          html`<rect
            x=${i * bw + 1}
            y=${h - (p.value / max) * h}
            width=${Math.max(1, bw - 2)}
            height=${(p.value / max) * h}
          >
            <title>${p.label}: ${p.value.toLocaleString()}${unit}</title>
          </rect>`,
      )}
      <line x1="0" y1=${h} x2=${w} y2=${h} class="axis" />
      ${
        points.length
          ? html`<text x="0" y=${h + 14}>${points[0]!.label}</text>
              <text x=${w} y=${h + 14} text-anchor="end">${points[points.length - 1]!.label}</text>`
          : null
      }
    </svg>
  </figure>`;
}
