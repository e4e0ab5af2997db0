// What the tests need to know about the project's Markdown: the anchors GitHub gives its headings,
// and the relative links a page makes to other pages (and to its own headings).
import { readFileSync } from 'node:fs';

/** Anchors GitHub gives a Markdown file's headings (code blocks skipped; repeats get -1, -2, ...). */
export function headingAnchors(file: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const slug = githubAnchor(heading[1]!);
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

/** GitHub's anchor for one heading: lower case, punctuation but `-` and `_` dropped, spaces → `-`. */
export function githubAnchor(heading: string): string {
  return heading
    .replace(/`/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/**
 * Every link target of a Markdown text that is neither a URL with a scheme nor inside code (fenced
 * blocks and inline code spans are skipped): inline `[text](target)` and reference `[name]: target`.
 */
export function relativeLinks(markdown: string): string[] {
  const prose = markdown.replace(/^\s*(```|~~~)[\s\S]*?^\s*\1.*$/gm, '').replace(/(`+)[\s\S]*?\1/g, '');
  const targets = [
    ...[...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!),
    ...[...prose.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)].map((m) => m[1]!),
  ];
  return targets.filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}
