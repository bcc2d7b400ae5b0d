/**
 * Checks on names and patterns shared by config validation and routing: table names (`namespace.table`)
 * and Java regexes, which must mean in JavaScript what they mean under the Java sink.
 */

/**
 * Why `name` (already lower-cased) is not a `namespace.table` identifier, or undefined. Parts are split
 * on '.' as Java's `TableIdentifier.parse` does; the last is the table, the rest the namespace levels.
 */
export function tableNameProblem(name: string): string | undefined {
  const parts = name.split('.');
  if (parts.length < 2) return `${JSON.stringify(name)} has no namespace (expected namespace.table)`;
  if (parts.some((p) => p === '')) return `${JSON.stringify(name)} has an empty namespace or table part (expected namespace.table)`;
  if (parts.some((p) => p !== p.trim())) return `${JSON.stringify(name)} has a part with leading or trailing whitespace`;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) return `${JSON.stringify(name)} contains a control character`;
  return undefined;
}

/** Why `pattern` is not a usable regex, or undefined. Java regexes are mostly JS regexes; what JS cannot compile is refused. */
export function regexProblem(pattern: string): string | undefined {
  const javaOnly = javaOnlyRegexSyntax(pattern);
  if (javaOnly !== undefined) return javaOnly;
  try {
    new RegExp(pattern);
    return undefined;
  } catch (e) {
    return `Not a valid regular expression (${(e as Error).message})`;
  }
}

/** Compiles a Java-style `matches()` regex: the whole string must match. */
export function wholeMatch(pattern: string): RegExp {
  return new RegExp(`^(?:${pattern})$`);
}

/** Escapes that mean the same in Java and in a JS regex without the `u` flag. */
const SHARED_ESCAPE_LETTERS = new Set('dDwWsSbBnrtfcxuk');

/**
 * Java regex syntax that a JS regex (no `u` flag) accepts but reads differently, so a route would
 * silently match other values than under the Java sink (java.util.regex.Pattern javadoc):
 * - a backslash before a letter JS does not share: `\A \z \Z \G \Q…\E \p{…} \P{…} \h \H \R \X \e \a \v`
 *   (JS reads most as the plain letter; Java's `\v` is any vertical whitespace, JS's only U+000B);
 * - inside a character class, a nested class `[a[b]]` (Java: union) or `&&` (Java: intersection).
 * Returns the first such construct, or undefined.
 */
export function javaOnlyRegexSyntax(pattern: string): string | undefined {
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i] as string;
    if (ch === '\\') {
      const next = pattern[i + 1] ?? '';
      if (next === 'x' && pattern[i + 2] === '{') return '\\x{…} is Java-only regex syntax that JavaScript reads differently; use \\xhh or \\uhhhh';
      if (/^[A-Za-z]$/.test(next) && !SHARED_ESCAPE_LETTERS.has(next)) {
        return `\\${next} is Java-only regex syntax that JavaScript reads differently; rewrite it (for example \\A → ^, \\z → $, \\p{Alpha} → [A-Za-z])`;
      }
      i++;
      continue;
    }
    if (inClass) {
      if (ch === '[') return 'a nested character class ([a[b]]) is Java-only regex syntax (union) that JavaScript reads differently';
      if (ch === '&' && pattern[i + 1] === '&') return '&& inside a character class is Java-only regex syntax (intersection) that JavaScript reads differently';
      if (ch === ']') inClass = false;
    } else if (ch === '[') {
      inClass = true;
      // A ']' right after '[' or '[^' is a literal in Java, but ends an empty class in JS.
      if (pattern[i + 1] === '^') i++;
      if (pattern[i + 1] === ']') return '[] or [^] at the start of a class means a literal ] in Java but an empty class in JavaScript; escape it as \\]';
    }
  }
  return undefined;
}
