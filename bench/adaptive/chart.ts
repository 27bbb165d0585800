/**
 * The "unknown limits" chart as hand-written SVG: one small panel per (server, what the client was
 * told), accepted requests per second over time, one line per client, the server's rate dashed.
 *
 * @module
 */
export interface Panel {
  readonly title: string;
  readonly series: readonly { readonly client: string; readonly perSecond: readonly number[] }[];
}

const COLORS: Record<string, string> = { "AWS SDK adaptive": "#d95f02", "sluice, fixed limit": "#7570b3", "sluice adaptive": "#1b9e77" };

function esc(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll('"', "&quot;");
}

export function adaptiveSvg(rows: readonly (readonly Panel[])[], rate: number, title: string): string {
  const cols = Math.max(...rows.map((r) => r.length));
  const pw = 300;
  const ph = 130;
  const gapX = 30;
  const gapY = 46;
  const left = 40;
  const top = 70;
  const width = left + cols * (pw + gapX);
  const height = top + rows.length * (ph + gapY) + 10;
  const yMax = rate * 2;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${left}" y="20" font-size="14">${esc(title)}</text>`,
  ];
  let lx = left;
  for (const [name, color] of Object.entries(COLORS)) {
    out.push(`<line x1="${lx}" y1="38" x2="${lx + 20}" y2="38" stroke="${color}" stroke-width="2"/><text x="${lx + 24}" y="42">${esc(name)}</text>`);
    lx += 170;
  }
  out.push(`<line x1="${lx}" y1="38" x2="${lx + 20}" y2="38" stroke="#444" stroke-dasharray="4 3"/><text x="${lx + 24}" y="42">server's rate</text>`);
  rows.forEach((row, r) => {
    row.forEach((panel, c) => {
      const x0 = left + c * (pw + gapX);
      const y0 = top + r * (ph + gapY);
      const n = Math.max(1, ...panel.series.map((s) => s.perSecond.length));
      const sx = (t: number) => x0 + (t / n) * pw;
      const sy = (v: number) => y0 + ph - (Math.min(v, yMax) / yMax) * ph;
      out.push(`<text x="${x0}" y="${y0 - 6}">${esc(panel.title)}</text>`);
      out.push(`<rect x="${x0}" y="${y0}" width="${pw}" height="${ph}" fill="none" stroke="#ccc"/>`);
      out.push(`<line x1="${x0}" y1="${sy(rate)}" x2="${x0 + pw}" y2="${sy(rate)}" stroke="#444" stroke-dasharray="4 3"/>`);
      if (c === 0) {
        out.push(`<text x="${x0 - 4}" y="${sy(rate) + 4}" text-anchor="end">${rate}/s</text>`, `<text x="${x0 - 4}" y="${y0 + ph}" text-anchor="end">0</text>`);
      }
      out.push(`<text x="${x0 + pw}" y="${y0 + ph + 13}" text-anchor="end">${n} s</text>`);
      for (const s of panel.series) {
        const points = s.perSecond.map((v, t) => `${(sx(t + 0.5)).toFixed(1)},${sy(v).toFixed(1)}`).join(" ");
        out.push(`<polyline fill="none" stroke="${COLORS[s.client] ?? "#000"}" stroke-width="1.6" points="${points}"/>`);
      }
    });
  });
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}
