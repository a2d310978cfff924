// The source files the code checks read (check:size, check:clock, check:sql): the .ts and .js files under the
// given folders, as the working tree has them, path relative to the repository, sorted.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export function sourceFiles(dirs: readonly string[], root = '.'): { path: string; text: string }[] {
  const walk = (dir: string): string[] =>
    readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) => {
      const p = `${dir}/${e.name}`;
      if (e.isDirectory()) return walk(p);
      return /\.(ts|js)$/.test(e.name) ? [p] : [];
    });
  return dirs
    .flatMap((d) => walk(d))
    .sort()
    .map((path) => ({ path, text: readFileSync(join(root, path), 'utf8') }));
}
