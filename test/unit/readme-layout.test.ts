/**
 * The README's "Layout" section is the real tree: every top-level folder, every src/ folder and every file
 * directly in src/ that the repository has is listed, and nothing listed is missing. Folders are read from
 * git (tracked files plus untracked, not ignored ones), so build output and caches do not count.
 *
 * In the section's code block a folder is an entry when it starts a line (top level: column 0; src/: two
 * spaces) or follows at least three spaces, and ends in `/` followed by whitespace; `unit/, smoke/` in a
 * description are not entries.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

function treePaths(): string[] {
  const r = spawnSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' });
  assert.equal(r.status, 0, `git ls-files: ${r.stderr}`);
  return r.stdout.split('\n').filter((p) => p !== '');
}

function layoutBlock(): string[] {
  const readme = readFileSync(new URL('README.md', `file://${root}`), 'utf8');
  const section = /^## Layout\n([\s\S]*?)(?=^## )/m.exec(readme)?.[1];
  assert.ok(section !== undefined, 'README.md has a "## Layout" section');
  const block = /^```\n([\s\S]*?)^```$/m.exec(section)?.[1];
  assert.ok(block !== undefined, 'the Layout section has a code block');
  return block.split('\n');
}

/** Entries of the block: [indent of the line, name] for folders (`name/`) and src/ root files (`name.ts`). */
function entries(lines: readonly string[]): { top: Set<string>; srcFolders: Set<string>; srcFiles: Set<string> } {
  const top = new Set<string>();
  const srcFolders = new Set<string>();
  const srcFiles = new Set<string>();
  for (const line of lines) {
    const indent = /^ */.exec(line)?.[0].length ?? 0;
    if (indent !== 0 && indent !== 2) continue; // continuation lines of a description
    const body = line.slice(indent);
    for (const m of body.matchAll(/(?:^|\s{3,})(\.?[A-Za-z][\w.-]*)(\/|\.ts)(?=\s|$)/g)) {
      const name = m[1] as string;
      if (indent === 0 && m[2] === '/') top.add(name);
      else if (indent === 2 && m[2] === '/') srcFolders.add(name);
      else if (indent === 2) srcFiles.add(`${name}.ts`);
    }
  }
  return { top, srcFolders, srcFiles };
}

const sorted = (s: Iterable<string>): string[] => [...s].sort();

test("README's Layout lists exactly the top-level folders, src/ folders and src/ files of the tree", () => {
  const paths = treePaths();
  const listed = entries(layoutBlock());
  const top = new Set(paths.filter((p) => p.includes('/')).map((p) => p.slice(0, p.indexOf('/'))));
  const src = paths.filter((p) => p.startsWith('src/')).map((p) => p.slice(4));
  const srcFolders = new Set(src.filter((p) => p.includes('/')).map((p) => p.slice(0, p.indexOf('/'))));
  const srcFiles = new Set(src.filter((p) => !p.includes('/') && p.endsWith('.ts')));
  assert.deepEqual(sorted(listed.top), sorted(top), 'top-level folders');
  assert.deepEqual(sorted(listed.srcFolders), sorted(srcFolders), 'src/ folders');
  assert.deepEqual(sorted(listed.srcFiles), sorted(srcFiles), 'files directly in src/');
});
