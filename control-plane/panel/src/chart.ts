// Charts in SVG (no chart library; sizes are SVG attributes, so the strict CSP needs no inline style): bars over time
// with the largest value at full height, and horizontal bars of a breakdown. Each has a text summary for screen
// readers and a <title> per bar.
import { html } from './html.js';

export interface Point {
  label: string;
  value: number;
}

const plain = (n: number) => n.toLocaleString();

export function BarChart({
  points,
  title,
  unit = '',
  format = plain,
}: {
  points: Point[];
  title: string;
  unit?: string;
  format?: (n: number) => string;
}) {
  const max = Math.max(1, ...points.map((p) => p.value));
  const w = 360;
  const h = 100;
  const bw = points.length ? w / points.length : w;
  const total = points.reduce((s, p) => s + p.value, 0);
  return html`<figure class="chart">
    <figcaption>${title}: ${format(total)}${unit} in all</figcaption>
    <svg
      viewBox="0 0 ${w} ${h + 16}"
      role="img"
      aria-label="${title}, ${points.length} bars, largest ${format(max)}${unit}"
    >
      ${points.map(
        (p, i) =>
          html`<rect
            x=${i * bw + 1}
            y=${h - (p.value / max) * h}
            width=${Math.max(1, bw - 2)}
            height=${(p.value / max) * h}
          >
            <title>${p.label}: ${format(p.value)}${unit}</title>
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

/** Horizontal bars: a label, a bar, the value and its share of `total` (the points' sum by default). */
export function Bars({ points, title, total }: { points: Point[]; title: string; total?: number }) {
  const sum = total ?? points.reduce((s, p) => s + p.value, 0);
  const max = Math.max(1, ...points.map((p) => p.value));
  const row = 22;
  const w = 360;
  const barX = 90;
  const barW = 170;
  const share = (v: number) => (sum ? `${((100 * v) / sum).toFixed(1)} %` : '');
  return html`<figure class="chart">
    <figcaption>${title}</figcaption>
    ${
      points.length === 0
        ? html`<p class="note">No requests in this period.</p>`
        : html`<svg viewBox="0 0 ${w} ${points.length * row}" class="hbars" role="list">
            ${points.map(
              (p, i) =>
                html`<g role="listitem" aria-label=${`${p.label}: ${p.value.toLocaleString()} ${share(p.value)}`}>
                  <text x="0" y=${i * row + 15}>${p.label}</text>
                  <rect x=${barX} y=${i * row + 4} height=${row - 8} width=${Math.max(1, (p.value / max) * barW)} />
                  <text x=${barX + barW + 8} y=${i * row + 15}>${p.value.toLocaleString()} ${share(p.value)}</text>
                </g>`,
            )}
          </svg>`
    }
  </figure>`;
}
