// The documentation's links, and the code's pointers into it, lead somewhere. README.md and
// docs/ were split into several files and will be again: a relative link to a file that moved,
// an #anchor to a heading that was renamed, or a source comment citing `docs/x.md §N`,
// `README "Heading"` or a design note that is not in the repository fails here, naming the place.
// No Redis, no build.

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../support/bot.js';

const THIS_FILE = fileURLToPath(import.meta.url);
const SOURCE_DIRS = ['src', 'test', 'bench', 'demo'];
const SOURCE_FILE = /\.(?:[cm]?ts|[cm]?js)$/;
/** Settings files whose `#` comments point at the docs too. */
const COMMENTED_SETTINGS = ['.env.example', 'countersign.example.yml', 'manifest.yml'];

function filesUnder(dir: string, keep: (path: string) => boolean): string[] {
  const root = join(PROJECT_ROOT, dir);
  if (!existsSync(root)) return [];
  return readdirSync(root, { recursive: true, encoding: 'utf8' })
    .map((path) => join(root, path))
    .filter((path) => !path.includes('/node_modules/') && keep(path));
}

const markdownFiles = [join(PROJECT_ROOT, 'README.md'), ...filesUnder('docs', (p) => p.endsWith('.md'))];

/** Lines of a Markdown file outside fenced code blocks, with their numbers. */
function proseLines(text: string): Array<[number, string]> {
  const out: Array<[number, string]> = [];
  let fenced = false;
  text.split('\n').forEach((line, i) => {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    else if (!fenced) out.push([i + 1, line]);
  });
  return out;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

interface Headings {
  /** Anchors, numbered as GitHub numbers repeats (`x`, `x-1`, …). */
  anchors: Set<string>;
  /** Heading texts as written, without the leading #s, and bold paragraph labels (`**Label.**`). */
  texts: string[];
  /** Section numbers of numbered headings (`## 3. …`, `### 4.2.1 …`). */
  sections: Set<string>;
}

const headingCache = new Map<string, Headings>();
function headingsOf(file: string): Headings {
  const cached = headingCache.get(file);
  if (cached) return cached;
  const headings: Headings = { anchors: new Set(), texts: [], sections: new Set() };
  const seen = new Map<string, number>();
  for (const [, line] of proseLines(readFileSync(file, 'utf8'))) {
    const label = /^\s*(?:- )?\*\*([^*]+)\*\*/.exec(line);
    if (label) headings.texts.push(label[1]!);
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const text = m[1]!;
    const base = slug(text);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    headings.anchors.add(n === 0 ? base : `${base}-${n}`);
    headings.texts.push(text);
    const number = /^(\d+(?:\.\d+)*)\.?\s/.exec(text);
    if (number) headings.sections.add(number[1]!);
  }
  headingCache.set(file, headings);
  return headings;
}

const where = (file: string, line: number) => `${relative(PROJECT_ROOT, file)}:${line}`;

/** Every relative link of a Markdown file, with what is wrong with it (or null). */
function markdownLinks(file: string): Array<{ at: string; link: string; problem: string | null }> {
  const out: Array<{ at: string; link: string; problem: string | null }> = [];
  for (const [number, line] of proseLines(readFileSync(file, 'utf8'))) {
    // Code spans may hold `](` and are never links; a link's text may be code: [`x`](x).
    const prose = line.replace(/`[^`]*`/g, '');
    for (const m of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const link = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // https:, mailto:
      out.push({ at: where(file, number), link, problem: linkProblem(file, link) });
    }
  }
  return out;
}

function linkProblem(from: string, link: string): string | null {
  const [path, anchor] = link.split('#', 2) as [string, string | undefined];
  const target = path === '' ? from : resolve(dirname(from), decodeURIComponent(path));
  if (!existsSync(target)) return `${relative(PROJECT_ROOT, target)} does not exist`;
  if (anchor === undefined || !target.endsWith('.md')) return null;
  if (headingsOf(target).anchors.has(anchor)) return null;
  return `${relative(PROJECT_ROOT, target)} has no heading with the anchor #${anchor}`;
}

/** The comments of a source file, neighbouring `//` lines joined, comment markers removed. */
function commentsOf(file: string): Array<{ line: number; text: string }> {
  const text = readFileSync(file, 'utf8');
  if (!SOURCE_FILE.test(file)) {
    return text.split('\n').flatMap((line, i) => {
      const hash = line.indexOf('#');
      return hash < 0 ? [] : [{ line: i + 1, text: line.slice(hash + 1) }];
    });
  }
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const ranges = new Map<number, ts.CommentRange>();
  const collect = (pos: number, get: typeof ts.getLeadingCommentRanges) => {
    for (const range of get(text, pos) ?? []) ranges.set(range.pos, range);
  };
  const visit = (node: ts.Node) => {
    collect(node.getFullStart(), ts.getLeadingCommentRanges);
    collect(node.getEnd(), ts.getTrailingCommentRanges);
    ts.forEachChild(node, visit);
  };
  visit(source);
  collect(source.endOfFileToken.getFullStart(), ts.getLeadingCommentRanges);
  const sorted = [...ranges.values()].sort((a, b) => a.pos - b.pos);
  const joined: Array<{ pos: number; end: number }> = [];
  for (const range of sorted) {
    const last = joined.at(-1);
    if (last && /^\s*$/.test(text.slice(last.end, range.pos))) last.end = range.end;
    else joined.push({ pos: range.pos, end: range.end });
  }
  return joined.map(({ pos, end }) => ({
    line: source.getLineAndCharacterOfPosition(pos).line + 1,
    text: text
      .slice(pos, end)
      .split('\n')
      .map((l) => l.replace(/^\s*(?:\/\/+|\/\*+|\*+\/?)?/, '').replace(/\*+\/\s*$/, ''))
      .join(' ')
      .replace(/\s+/g, ' '),
  }));
}

const SECTION = String.raw`\s*§\s*(\d+(?:\.\d+)*)`;
const REFERENCES: Array<{ pattern: RegExp; resolve: (m: RegExpMatchArray) => Reference }> = [
  {
    // docs/x.md, docs/x.md §N, docs/x.md, "Heading"
    pattern: new RegExp(String.raw`\b(docs/[\w./-]+\.md)(?:${SECTION}|,?\s*"([^"]+)")?`, 'g'),
    resolve: (m) => ({ file: m[1]!, section: m[2], heading: m[3] }),
  },
  {
    // x.md §N: the docs/ file of that name
    pattern: new RegExp(String.raw`(?<![\w./-])([\w-]+\.md)${SECTION}`, 'g'),
    resolve: (m) => ({ file: `docs/${m[1]}`, section: m[2] }),
  },
  {
    // README "Heading", README's "Heading"
    pattern: /\bREADME(?:\.md)?(?:'s)?,?\s*"([^"]+)"/g,
    resolve: (m) => ({ file: 'README.md', heading: m[1] }),
  },
  {
    // DESIGN §N: a design note that must be in the repository to be cited
    pattern: new RegExp(String.raw`\bDESIGN(?:\.md)?${SECTION}`, 'g'),
    resolve: (m) => ({ file: 'DESIGN.md', section: m[1] }),
  },
];

interface Reference {
  file: string;
  section?: string | undefined;
  heading?: string | undefined;
}

function referenceProblem({ file, section, heading }: Reference): string | null {
  const path = join(PROJECT_ROOT, file);
  if (!existsSync(path)) return `${file} does not exist`;
  const headings = headingsOf(path);
  if (section !== undefined && !headings.sections.has(section)) return `${file} has no section ${section}`;
  if (heading !== undefined) {
    const wanted = heading.toLowerCase();
    const found =
      headings.anchors.has(slug(heading)) ||
      headings.texts.some((text) => {
        const plain = text.replace(/`/g, '').toLowerCase();
        // README "Try it without Slack" names its section by how it starts; a doc may be cited by
        // a heading's distinctive part ("sixth round") or a bold label ("Object shapes").
        return file === 'README.md' ? plain.startsWith(wanted) : plain.includes(wanted);
      });
    if (!found) return `${file} has no heading (or bold label) "${heading}"`;
  }
  return null;
}

function commentReferences(): Array<{ at: string; reference: string; problem: string | null }> {
  const files = [
    ...SOURCE_DIRS.flatMap((dir) => filesUnder(dir, (p) => SOURCE_FILE.test(p))),
    ...COMMENTED_SETTINGS.map((name) => join(PROJECT_ROOT, name)),
  ];
  const out: Array<{ at: string; reference: string; problem: string | null }> = [];
  for (const file of files) {
    if (file === THIS_FILE) continue; // its comments and cases show the patterns, not references
    // Most files cite nothing: parse only those whose text could.
    if (!/\.md|README|DESIGN/.test(readFileSync(file, 'utf8'))) continue;
    for (const comment of commentsOf(file)) {
      for (const { pattern, resolve } of REFERENCES) {
        for (const m of comment.text.matchAll(pattern)) {
          out.push({ at: where(file, comment.line), reference: m[0], problem: referenceProblem(resolve(m)) });
        }
      }
    }
  }
  return out;
}

describe('documentation links', () => {
  it('every relative link in README.md and docs/ leads to a file, and an #anchor to its heading', () => {
    const links = markdownFiles.flatMap(markdownLinks);
    expect(links.length).toBeGreaterThan(50);
    expect(links.filter((l) => l.problem !== null)).toEqual([]);
  });

  it('every doc reference in a comment of src/, test/, bench/ and demo/ leads to what it names', () => {
    const references = commentReferences();
    expect(references.length).toBeGreaterThan(20);
    expect(references.filter((r) => r.problem !== null)).toEqual([]);
  });

  it('reads headings, anchors and numbered sections as GitHub does', () => {
    expect(slug('Remembered grants ("don\'t ask again")')).toBe('remembered-grants-dont-ask-again');
    expect(slug('Creating the Slack app from manifest.yml')).toBe('creating-the-slack-app-from-manifestyml');
    expect(slug('`/countersign` and App Home')).toBe('countersign-and-app-home');
    expect(slug('"View full": the whole request')).toBe('view-full-the-whole-request');
    expect(headingsOf(join(PROJECT_ROOT, 'docs', 'msp-approvals.md')).sections).toContain('4.2.1');
    expect(referenceProblem({ file: 'docs/nowhere.md' })).toBe('docs/nowhere.md does not exist');
    expect(referenceProblem({ file: 'docs/slack-platform.md', section: '99' })).toMatch(/no section 99/);
    expect(referenceProblem({ file: 'README.md', heading: 'No such heading' })).toMatch(/no heading/);
    expect(linkProblem(join(PROJECT_ROOT, 'README.md'), 'docs/routing.md#no-such-anchor')).toMatch(
      /no heading with the anchor/,
    );
  });
});
