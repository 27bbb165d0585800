/**
 * A grouped horizontal bar chart as a standalone SVG (no dependencies), for `bench/redis.svg`.
 *
 * @module
 */

export interface BarChart {
  readonly title: string;
  /** One group of bars per label (a shape or a process count). */
  readonly groups: readonly string[];
  /** One bar per group for each series (a library or decision), values in decisions per second. */
  readonly series: readonly { readonly label: string; readonly values: readonly number[] }[];
}

const COLORS = ["#2b6cb0", "#38a169", "#805ad5", "#dd6b20", "#718096"];

function escape(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

/** Renders `chart`: bars scaled to the largest value, each labelled with its figure. */
export function barChartSvg(chart: BarChart): string {
  const bar = 14;
  const gap = 10;
  const left = 200;
  const width = 900;
  const plot = width - left - 110;
  const top = 48;
  const groupHeight = chart.series.length * bar + gap;
  const height = top + chart.groups.length * groupHeight + 20 + 18 * Math.ceil(chart.series.length / 3);
  const max = Math.max(...chart.series.flatMap((s) => s.values), 1);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${width / 2}" y="22" text-anchor="middle" font-size="14">${escape(chart.title)}</text>`,
  ];
  chart.groups.forEach((group, g) => {
    const y0 = top + g * groupHeight;
    out.push(`<text x="${left - 8}" y="${y0 + (chart.series.length * bar) / 2 + 4}" text-anchor="end">${escape(group)}</text>`);
    chart.series.forEach((series, k) => {
      const value = series.values[g] ?? 0;
      const w = Math.max(1, (value / max) * plot);
      const y = y0 + k * bar;
      out.push(`<rect x="${left}" y="${y}" width="${w.toFixed(1)}" height="${bar - 2}" fill="${COLORS[k % COLORS.length]}"/>`);
      out.push(`<text x="${(left + w + 4).toFixed(1)}" y="${y + bar - 4}" font-size="11">${Math.round(value).toLocaleString("en-US")}/s</text>`);
    });
  });
  const legendY = top + chart.groups.length * groupHeight + 10;
  chart.series.forEach((series, k) => {
    const x = left + (k % 3) * 220;
    const y = legendY + Math.floor(k / 3) * 18;
    out.push(`<rect x="${x}" y="${y}" width="12" height="12" fill="${COLORS[k % COLORS.length]}"/>`);
    out.push(`<text x="${x + 18}" y="${y + 10}">${escape(series.label)}</text>`);
  });
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}
