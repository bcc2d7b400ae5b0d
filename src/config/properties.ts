/**
 * Java `.properties` text (java.util.Properties.load): the worker file, `.properties` connector files and
 * the files FileConfigProvider reads (`${file:/path/creds.properties:key}`, config-providers.ts).
 *
 * Owns: the syntax. Must not: read files (callers pass text).
 */
import { ConfigError } from '../core/errors.ts';

/**
 * Parses Java `.properties` text (java.util.Properties.load): `#`/`!` comment lines, `key=value`,
 * `key: value` and `key value`, backslash escapes (`\t \n \r \f \uXXXX`, `\=`, `\:`, `\ `, `\\`; any
 * other `\x` is `x`), lines continued by an odd number of trailing backslashes (the next line's leading
 * whitespace dropped). A later duplicate wins. Text is taken as already decoded (UTF-8 files).
 */
export function parseProperties(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split(/\r\n|\r|\n/);
  for (let i = 0; i < lines.length; i++) {
    let line = (lines[i] as string).replace(/^[ \t\f]+/, '');
    if (line === '' || line.startsWith('#') || line.startsWith('!')) continue;
    while (endsWithContinuation(line) && i + 1 < lines.length) {
      line = line.slice(0, -1) + (lines[++i] as string).replace(/^[ \t\f]+/, '');
    }
    if (endsWithContinuation(line)) line = line.slice(0, -1);
    // The key ends at the first unescaped '=', ':' or whitespace.
    let k = 0;
    while (k < line.length) {
      const ch = line[k] as string;
      if (ch === '\\') k += 2;
      else if (ch === '=' || ch === ':' || ch === ' ' || ch === '\t' || ch === '\f') break;
      else k++;
    }
    const key = line.slice(0, Math.min(k, line.length));
    let v = k;
    while (v < line.length && /[ \t\f]/.test(line[v] as string)) v++;
    if (v < line.length && (line[v] === '=' || line[v] === ':')) v++;
    while (v < line.length && /[ \t\f]/.test(line[v] as string)) v++;
    out[unescape(key)] = unescape(line.slice(v));
  }
  return out;
}

function endsWithContinuation(line: string): boolean {
  let n = 0;
  for (let j = line.length - 1; j >= 0 && line[j] === '\\'; j--) n++;
  return n % 2 === 1;
}

function unescape(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const ch = s[i] as string;
    if (ch !== '\\' || i + 1 >= s.length) {
      out += ch;
      continue;
    }
    const next = s[++i] as string;
    switch (next) {
      case 't':
        out += '\t';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 'f':
        out += '\f';
        break;
      case 'u': {
        const hex = s.slice(i + 1, i + 5);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw new ConfigError(`Malformed \\uxxxx encoding in properties: \\u${hex}`);
        out += String.fromCharCode(parseInt(hex, 16));
        i += 4;
        break;
      }
      default:
        out += next;
    }
  }
  return out;
}

