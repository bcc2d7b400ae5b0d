/**
 * Text helpers shared by config validation and the Iceberg model (which may not import each other).
 */

/**
 * Splits `partition-by` text on commas outside parentheses, trimming each term (the Java sink's
 * `,(?![^()]*+\))`): `"bucket(id, 16), day(ts)"` → `["bucket(id, 16)", "day(ts)"]`; blank → [].
 * A stray `)` never drives the depth below zero; balance itself is checked by the callers.
 */
export function splitPartitionBy(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    else if (ch === ')') depth = Math.max(0, depth - 1);
    if (ch === ',' && depth === 0) {
      out.push(cur.trim());
      cur = '';
    } else cur += ch;
  }
  out.push(cur.trim());
  return out.length === 1 && out[0] === '' ? [] : out;
}
