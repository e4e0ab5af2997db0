// What the source checks of `npm run lint` (check-size.ts, check-casts.ts) share: which files they
// read, and how a file becomes a syntax tree.
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

/**
 * Every .ts file under `dir`, sorted, so a report reads the same on every run; `skip` is asked with
 * each path relative to `dir` and leaves out what it says (a file or a whole folder).
 */
export function sourceFiles(dir: string, skip: (path: string) => boolean = () => false, root = dir): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const path = join(dir, entry.name);
      if (skip(relative(root, path))) return [];
      if (entry.isDirectory()) return sourceFiles(path, skip, root);
      return entry.isFile() && entry.name.endsWith('.ts') ? [path] : [];
    })
    .sort();
}

/** The syntax tree of one source text, with parent links (a check may walk up from a node). */
export function parseSource(file: string, text: string): ts.SourceFile {
  return ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, file.endsWith('x') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
}
