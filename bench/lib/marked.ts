/**
 * Marked blocks in a generated markdown file: `<!-- name:start -->` … `<!-- name:end -->`. Scripts
 * other than `bench/main.ts` (`bench/redis.ts`) write their sections of `bench/RESULTS.md` between
 * such markers, and a section can be regenerated alone (`--only=scheduler`); so a script that
 * rewrites the file whole keeps every block it did not produce, and one that updates a section
 * replaces only its block.
 *
 * @module
 */

/** One marked block: its name and its text, markers included. */
export interface MarkedBlock {
  name: string;
  text: string;
}

const START = /<!-- ([\w.-]+):start -->/g;

/** The marked blocks of `text`, in order; a start marker without its end marker is not a block. */
export function markedBlocks(text: string): MarkedBlock[] {
  const blocks: MarkedBlock[] = [];
  let taken = 0; // end of the last block: a block nested in it is part of it
  for (const m of text.matchAll(START)) {
    if (m.index < taken) continue;
    const name = m[1]!;
    const end = `<!-- ${name}:end -->`;
    const j = text.indexOf(end, m.index + m[0].length);
    if (j < 0) continue;
    taken = j + end.length;
    blocks.push({ name, text: text.slice(m.index, taken) });
  }
  return blocks;
}

/** `block` wrapped in the markers of `name`. */
export function marked(name: string, body: string): string {
  return `<!-- ${name}:start -->\n${body.trim()}\n<!-- ${name}:end -->`;
}

/**
 * `text` with the block named like `block` replaced by it (markers included), or with `block`
 * appended when `text` has no such block.
 */
export function replaceBlock(text: string, block: MarkedBlock): string {
  const old = markedBlocks(text).find((b) => b.name === block.name);
  if (old === undefined) return `${text.trimEnd()}\n\n${block.text}\n`;
  const i = text.indexOf(old.text);
  return text.slice(0, i) + block.text + text.slice(i + old.text.length);
}

/**
 * A freshly generated `next` that keeps what `previous` had and `next` does not: every marked block
 * of `previous` whose name `next` lacks is appended, in its order — a full rewrite never drops a
 * section another script wrote.
 */
export function keepMarkedBlocks(next: string, previous: string): string {
  const have = new Set(markedBlocks(next).map((b) => b.name));
  let out = next;
  for (const block of markedBlocks(previous)) {
    if (!have.has(block.name)) out = `${out.trimEnd()}\n\n${block.text}\n`;
  }
  return out;
}
