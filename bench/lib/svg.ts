/**
 * The saturation chart as hand-written SVG: one panel per library, sharing the time axis. Bars are
 * grants per 100 ms; the line is what a server counting a rolling window sees (grants in the trailing
 * window, at every grant and every 10 ms, so no peak is missed); the dashed line is the limit. A line
 * above the dashed one is a violation, visible at a glance.
 *
 * @module
 */
import { histogram, maxInWindow, sorted, trailingCounts } from "./stats.ts";

export interface ChartSeries {
  label: string;
  t0: number;
  starts: readonly number[];
}

export interface ChartOptions {
  limit: number;
  interval: number;
  /** Bar width in ms. @default 100 */
  bin?: number;
  title: string;
}

function esc(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll('"', "&quot;");
}

const f = (x: number): string => (Math.round(x * 10) / 10).toString();

export function saturationSvg(series: readonly ChartSeries[], o: ChartOptions): string {
  const bin = o.bin ?? 100;
  const width = 960;
  const left = 56;
  const right = 16;
  const panelH = 120;
  const gap = 34;
  const top = 64;
  const plotW = width - left - right;
  const spanMs = Math.max(...series.map((s) => (s.starts.length === 0 ? 0 : Math.max(...s.starts) - s.t0)), o.interval);
  const endMs = Math.ceil((spanMs + 500) / 1000) * 1000;
  const peaks = series.map((s) => maxInWindow(s.starts, o.interval).max);
  const yMax = Math.ceil((Math.max(o.limit * 1.25, ...peaks.map((p) => p * 1.05)) / 10)) * 10;
  const height = top + series.length * (panelH + gap);
  const x = (t: number): number => left + (t / endMs) * plotW;
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="${left}" y="22" font-size="15" font-weight="600">${esc(o.title)}</text>`,
    `<g transform="translate(${left},38)">`,
    `<rect width="12" height="10" fill="#9ec5e8"/><text x="16" y="9">grants per ${bin} ms</text>`,
    `<line x1="150" y1="5" x2="172" y2="5" stroke="#1f4e79" stroke-width="1.5"/><text x="176" y="9">grants in the trailing ${o.interval} ms (what a rolling-window server counts)</text>`,
    `<line x1="600" y1="5" x2="622" y2="5" stroke="#c00000" stroke-width="1.5" stroke-dasharray="5,3"/><text x="626" y="9">limit: ${o.limit} per ${o.interval} ms</text>`,
    `</g>`,
  );
  series.forEach((s, i) => {
    const y0 = top + i * (panelH + gap) + 16;
    const y = (v: number): number => y0 + panelH - (Math.min(v, yMax) / yMax) * panelH;
    const bins = Math.ceil(endMs / bin);
    const counts = histogram(s.starts, s.t0, bin, bins);
    // Every 10 ms, plus just before and at every grant, so each step of the count is drawn.
    const grid = Array.from({ length: Math.ceil(endMs / 10) + 1 }, (_, k) => s.t0 + k * 10);
    const samples = sorted([...grid, ...s.starts, ...s.starts.map((t) => t - 1e-6)]);
    const trailing = trailingCounts(s.starts, samples, o.interval);
    const peak = peaks[i]!;
    out.push(`<g>`);
    out.push(`<text x="${left}" y="${y0 - 5}" font-size="12" font-weight="600">${esc(s.label)}</text>`);
    out.push(`<text x="${width - right}" y="${y0 - 5}" text-anchor="end" fill="${peak > o.limit ? "#c00000" : "#333"}">most in any ${o.interval} ms: ${peak}${peak > o.limit ? " — over the limit" : ""}</text>`);
    out.push(`<rect x="${left}" y="${y0}" width="${plotW}" height="${panelH}" fill="#fafafa" stroke="#ddd"/>`);
    for (const v of [0, o.limit / 2, o.limit]) {
      out.push(`<text x="${left - 6}" y="${f(y(v) + 4)}" text-anchor="end" fill="#666">${v}</text>`);
    }
    counts.forEach((c, k) => {
      if (c === 0) return;
      const bx = x(k * bin);
      out.push(`<rect x="${f(bx + 0.5)}" y="${f(y(c))}" width="${f(Math.max(1, (bin / endMs) * plotW - 1))}" height="${f(y0 + panelH - y(c))}" fill="#9ec5e8"/>`);
    });
    const points = trailing.map((v, k) => `${f(x(samples[k]! - s.t0))},${f(y(v))}`).join(" ");
    out.push(`<polyline points="${points}" fill="none" stroke="#1f4e79" stroke-width="1.5"/>`);
    out.push(`<line x1="${left}" y1="${f(y(o.limit))}" x2="${left + plotW}" y2="${f(y(o.limit))}" stroke="#c00000" stroke-width="1.2" stroke-dasharray="5,3"/>`);
    for (let t = 0; t <= endMs; t += 1000) {
      out.push(`<line x1="${f(x(t))}" y1="${y0 + panelH}" x2="${f(x(t))}" y2="${y0 + panelH + 4}" stroke="#999"/>`);
      out.push(`<text x="${f(x(t))}" y="${y0 + panelH + 15}" text-anchor="middle" fill="#666">${t / 1000} s</text>`);
    }
    out.push(`</g>`);
  });
  out.push(`</svg>`);
  return out.join("\n") + "\n";
}
