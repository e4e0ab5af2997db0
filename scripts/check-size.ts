// `npm run lint` step: no source file under src/ over 250 lines, no function over 60. Long files and
// functions are where one thing stops being in one place; the limits keep each readable in one go.
// Run with `tsx scripts/check-size.ts [dir]`; prints one line per offender and exits 1 if any.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { parseSource, sourceFiles } from './source-files.ts';

export interface Limits {
  fileLines: number;
  functionLines: number;
}

export const LIMITS: Limits = { fileLines: 250, functionLines: 60 };

/** One thing over its limit: the whole file (line 1), or a function starting at `line`. */
export type Oversize = { kind: 'file'; file: string; line: 1; lines: number } | { kind: 'function'; file: string; line: number; lines: number; name: string };

/**
 * Everything in one source text over its limit. A function counts from its first line to its last
 * (leading comments excluded), nested functions each on their own, and their lines also count
 * towards the function around them.
 */
export function findOversize(file: string, text: string, limits: Limits = LIMITS): Oversize[] {
  const found: Oversize[] = [];
  const lines = countLines(text);
  if (lines > limits.fileLines) found.push({ kind: 'file', file, line: 1, lines });
  const source = parseSource(file, text);
  const visit = (node: ts.Node): void => {
    if (isFunction(node)) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const length = last - first + 1;
      if (length > limits.functionLines) found.push({ kind: 'function', file, line: first + 1, lines: length, name: nameOf(node) });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Lines as an editor numbers them: a final newline does not start another line. */
function countLines(text: string): number {
  if (text === '') return 0;
  const breaks = text.split('\n').length - 1;
  return text.endsWith('\n') ? breaks : breaks + 1;
}

function isFunction(node: ts.Node): node is ts.FunctionLikeDeclaration {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isArrowFunction(node) ||
    ts.isFunctionExpression(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node)
  );
}

/** The name a reader would search for: its own, else the variable, property or call it sits in. */
function nameOf(node: ts.FunctionLikeDeclaration): string {
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  if (node.name) return node.name.getText();
  const parent = node.parent;
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) && parent.name) return parent.name.getText();
  if (ts.isCallExpression(parent)) return `(callback of ${parent.expression.getText().split('\n')[0]?.slice(-40)})`;
  return '(anonymous)';
}

export function describe(o: Oversize): string {
  return o.kind === 'file'
    ? `${o.file}: ${o.lines} lines (limit ${LIMITS.fileLines})`
    : `${o.file}:${o.line}: function ${o.name} is ${o.lines} lines (limit ${LIMITS.functionLines})`;
}

function main(dir: string): number {
  const found = sourceFiles(dir).flatMap((path) => findOversize(relative(process.cwd(), path), readFileSync(path, 'utf8')));
  for (const o of found) console.error(describe(o));
  if (found.length > 0) console.error(`${found.length} over the size limits (files ${LIMITS.fileLines} lines, functions ${LIMITS.functionLines})`);
  return found.length > 0 ? 1 : 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = main(process.argv[2] ?? 'src');
