// `npm run lint` step: no double cast through `unknown` (`x as unknown as T`) under src/. Such a cast
// tells the compiler to stop checking, so a type that no longer fits goes unnoticed; say what the
// value is instead. src/sandbox/ (the stand-in remote) may keep its own.
// Run with `tsx scripts/check-casts.ts [dir]`; prints one line per offender and exits 1 if any.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { parseSource, sourceFiles } from './source-files.ts';

/** Folders under the checked directory whose files are not checked. */
export const EXEMPT = ['sandbox'] as const;

/** A double cast through `unknown`, at its 1-based `line`; `text` is its first line as written. */
export interface DoubleCast {
  file: string;
  line: number;
  text: string;
}

/**
 * Every cast of a value already cast to `unknown` in one source text: `x as unknown as T`,
 * `(x as unknown) as T` and the angle-bracket spellings (`<T><unknown>x`). Comments and strings
 * that mention the phrase are not casts.
 */
export function findDoubleCasts(file: string, text: string): DoubleCast[] {
  const found: DoubleCast[] = [];
  const source = parseSource(file, text);
  const visit = (node: ts.Node): void => {
    if (isCast(node) && isCastToUnknown(skipParentheses(node.expression))) {
      const start = node.getStart(source);
      const line = source.getLineAndCharacterOfPosition(start).line + 1;
      found.push({ file, line, text: node.getText(source).split('\n')[0] ?? '' });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function isCast(node: ts.Node): node is ts.AsExpression | ts.TypeAssertion {
  return ts.isAsExpression(node) || ts.isTypeAssertionExpression(node);
}

function isCastToUnknown(node: ts.Node): boolean {
  return isCast(node) && node.type.kind === ts.SyntaxKind.UnknownKeyword;
}

function skipParentheses(node: ts.Expression): ts.Expression {
  return ts.isParenthesizedExpression(node) ? skipParentheses(node.expression) : node;
}

/** Whether `path` (relative to the checked directory) lies in an exempt folder. */
export function isExempt(path: string): boolean {
  const top = path.split(/[\\/]/)[0];
  return (EXEMPT as readonly string[]).includes(top ?? '');
}

export function describe(c: DoubleCast): string {
  return `${c.file}:${c.line}: double cast through unknown: ${c.text}`;
}

function main(dir: string): number {
  const found = sourceFiles(dir, isExempt).flatMap((path) => findDoubleCasts(relative(process.cwd(), path), readFileSync(path, 'utf8')));
  for (const c of found) console.error(describe(c));
  if (found.length > 0) console.error(`${found.length} double cast(s) through unknown (exempt: ${EXEMPT.map((e) => `${dir}/${e}/`).join(', ')})`);
  return found.length > 0 ? 1 : 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = main(process.argv[2] ?? 'src');
