// A domain's analytics: requests and bandwidth over time, the cache ratio, status codes and the top countries, over
// the last day, week or month. Read from the analytics API with the browser session (GET /domains/{domain}/analytics/…).
import { useEffect, useState } from 'preact/hooks';
import { Alert, html } from './html.js';
import { api, errorText } from './api.js';
import { BarChart, Bars, type Point } from './chart.js';

const RANGES = {
  day: { label: 'Last 24 hours', ms: 86_400_000, interval: '1h' },
  week: { label: 'Last 7 days', ms: 7 * 86_400_000, interval: '1h' },
  month: { label: 'Last 30 days', ms: 30 * 86_400_000, interval: '1d' },
} as const;
type Range = keyof typeof RANGES;

/** Bars drawn at most: a longer series is summed into this many. */
const MAX_BARS = 48;

interface Series {
  points: ({ time: string } & Record<string, number | string>)[];
}
interface Counts {
  requests: number;
  bytes: number;
}
interface Answers {
  requests: Series & { requests: number };
  bandwidth: Series & { bytes: number };
  cache: { requests: number; hit_ratio: number; cache_statuses: ({ cache_status: string } & Counts)[] };
  'status-codes': {
    requests: number;
    classes: Record<string, number>;
    status_codes: ({ status: number } & Counts)[];
  };
  countries: { requests: number; items: ({ country: string } & Counts)[] };
}
const READS = ['requests', 'bandwidth', 'cache', 'status-codes', 'countries'] as const;

/** Bytes as people read them (1000-based, as network traffic is counted). */
export function bytes(n: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB', 'PB'];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) {
    n /= 1000;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(n < 10 ? 1 : 0)} ${units[i]}`;
}

/** A series' points as bars, summed down to MAX_BARS; labels "MM-DD HH:MM" (or "MM-DD" by day). */
function seriesPoints(s: Series, field: string, byDay: boolean): Point[] {
  const points = s.points.map((p) => ({
    label: byDay ? p.time.slice(5, 10) : `${p.time.slice(5, 10)} ${p.time.slice(11, 16)}`,
    value: Number(p[field] ?? 0),
  }));
  if (points.length <= MAX_BARS) return points;
  const size = Math.ceil(points.length / MAX_BARS);
  const out: Point[] = [];
  for (let i = 0; i < points.length; i += size)
    out.push({ label: points[i]!.label, value: points.slice(i, i + size).reduce((a, p) => a + p.value, 0) });
  return out;
}

export function Analytics({ domain }: { domain: string }) {
  const [range, setRange] = useState<Range>('day');
  const [data, setData] = useState<Partial<Answers>>({});
  const [errors, setErrors] = useState<Record<string, string>>({});
  useEffect(() => {
    setData({});
    setErrors({});
    const r = RANGES[range];
    const until = new Date();
    const q = `since=${new Date(until.getTime() - r.ms).toISOString()}&until=${until.toISOString()}`;
    for (const read of READS) {
      const extra = read === 'requests' || read === 'bandwidth' ? `&interval=${r.interval}` : '';
      api('GET', `/domains/${encodeURIComponent(domain)}/analytics/${read}?${q}${extra}`).then(
        (a) => setData((d) => ({ ...d, [read]: a })),
        (e) => setErrors((x) => ({ ...x, [read]: errorText(e) })),
      );
    }
  }, [domain, range]);
  const byDay = RANGES[range].interval === '1d';
  const panel = <K extends (typeof READS)[number]>(read: K, title: string, draw: (a: Answers[K]) => unknown) =>
    html`<section class="card chart-card" aria-labelledby=${`chart-${read}`}>
      <h3 id=${`chart-${read}`}>${title}</h3>
      ${
        errors[read]
          ? html`<${Alert} text=${errors[read]} />`
          : data[read] === undefined
            ? html`<p>Loading…</p>`
            : draw(data[read] as Answers[K])
      }
    </section>`;
  return html`<div>
    <label
      >Period
      <select value=${range} onChange=${(e: Event) => setRange((e.target as HTMLSelectElement).value as Range)}>
        ${Object.entries(RANGES).map(([k, r]) => html`<option value=${k}>${r.label}</option>`)}
      </select></label
    >
    <div class="charts">
      ${panel(
        'requests',
        'Requests',
        (a) =>
          html`<${BarChart}
            title=${`Requests per ${byDay ? 'day' : 'hour'}`}
            points=${seriesPoints(a, 'requests', byDay)}
          />`,
      )}
      ${panel(
        'bandwidth',
        'Bandwidth',
        (a) =>
          html`<${BarChart}
            title=${`Bytes sent to clients per ${byDay ? 'day' : 'hour'}`}
            points=${seriesPoints(a, 'bytes', byDay)}
            format=${bytes}
          />`,
      )}
      ${panel(
        'cache',
        'Cache',
        (a) =>
          html`<p class="big">
              <strong>${a.requests ? `${(a.hit_ratio * 100).toFixed(1)} %` : '—'}</strong> served from the cache
              <small>(HIT and STALE of the requests that looked in it)</small>
            </p>
            <${Bars}
              title="Requests by cache outcome"
              points=${a.cache_statuses.map((c) => ({ label: c.cache_status || 'no cache rule', value: c.requests }))}
            />`,
      )}
      ${panel(
        'status-codes',
        'Status codes',
        (a) =>
          html`<${Bars}
              title="Requests by class"
              points=${Object.entries(a.classes).map(([k, v]) => ({ label: k, value: v }))}
              total=${a.requests}
            />
            <${Bars}
              title="Most answered"
              points=${a.status_codes.slice(0, 8).map((s) => ({ label: String(s.status), value: s.requests }))}
              total=${a.requests}
            />`,
      )}
      ${panel(
        'countries',
        'Top countries',
        (a) =>
          html`<${Bars}
            title=${`Requests by country of the client (top ${Math.min(10, a.items.length)} of ${a.items.length})`}
            points=${a.items.slice(0, 10).map((c) => ({ label: c.country || 'Unknown', value: c.requests }))}
            total=${a.requests}
          />`,
      )}
    </div>
    <p class="note">Times in UTC.</p>
  </div>`;
}
