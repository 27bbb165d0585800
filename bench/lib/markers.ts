/**
 * Generated sections of markdown files, between markers.
 *
 * @module
 */

/**
 * `text` with what lies between `start` and `end` (markers included when `inclusive`) replaced by
 * `content`; appended (inclusive) when the markers are missing, refused (exclusive) so a moved
 * sentence is noticed.
 */
export function replaceBetween(text: string, start: string, end: string, content: string, inclusive: boolean): string {
  const i = text.indexOf(start);
  const j = text.indexOf(end, i);
  if (i < 0 || j < 0) {
    if (inclusive) return `${text.trimEnd()}\n\n${content}\n`;
    throw new Error(`markers ${start} … ${end} not found`);
  }
  return inclusive ? text.slice(0, i) + content + text.slice(j + end.length) : `${text.slice(0, i + start.length)}${content}${text.slice(j)}`;
}
