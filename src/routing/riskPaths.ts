import { posix } from 'node:path';
import picomatch from 'picomatch';
import { globOptions } from './globs.js';
import { normalizedPath, readAbsolutePath } from './pathSpelling.js';
import { directoryNamedBy } from './workspaceRoot.js';

// How a `paths` risk rule reads a file path. One file has many spellings: `.env`, `./.env`,
// `/srv/app/.env`, `/srv/app/config/../.env`. The path is resolved against the workspace root
// (the subject's own, else the session's) and normalized, and then matched in each spelling a
// pattern may be written for:
//
// - a pattern starting with "/" is matched on the absolute path;
// - any other pattern (`config/*.yml`, `**/.env`) also on the path relative to the workspace
//   root, when the file lies inside it.
//
// When no root is known, a relative path could be anywhere, and a rule that could cover it is
// taken to cover it (a risk rule had better ask once too often than once too few): the path as
// written is matched, and also as if below any directory at all. So `/srv/prod/secrets.yml`
// covers `secrets.yml`, `**/.env` covers `../.env`, and `/etc/**` covers every such path. Likewise
// an absolute path, when no root is known, is matched by a relative pattern that any of its tails
// matches (the root could be any of its directories). A path with `..` in it is matched so too
// for what follows its last `..`: after a symbolic link, `..` leads where only the filesystem
// knows (`/srv/repo/link/../passwd` may be `/etc/passwd`). A pattern's tails are cut at the "/" outside
// `{…}` and `[…]`, so a tail that starts inside `{a/b,c}` is not tried.
//
// Case is ignored, in the patterns and in the workspace root alike: on macOS and Windows
// `/SRV/App/.ENV` is the file `/srv/app/.env`, and lies inside the root `/srv/app`.
//
// Paths through /proc and /dev/fd are read for what they name (pathSpelling.ts):
// `/proc/self/root/etc/passwd` as `/etc/passwd`, what lies below `/proc/self/cwd` as a relative
// path with no known root, and an open file (`/dev/fd/3`, `/proc/self/fd/3`) as covered by every
// rule. A workspace root that names no directory by its spelling is no known root.

/** `../../etc/passwd` below an unknown directory is `etc/passwd` below another one. */
function belowAnyDirectory(relative: string): string {
  return relative.replace(/^(?:\.\.(?:\/|$))+/, '');
}

/**
 * What follows the last `..` of a path, when it has one: `/srv/repo/link/../passwd` gives
 * `passwd`. Resolved by hand, `..` after a directory that is a symbolic link leads elsewhere than
 * the spelling says (to the parent of the link's target, which only the filesystem knows), so
 * the rest could be below any directory at all. Undefined without a `..`, or with nothing after it.
 */
function afterLastParent(path: string): string | undefined {
  const segments = path.split('/');
  const last = segments.lastIndexOf('..');
  if (last < 0) return undefined;
  const rest = segments.slice(last + 1).filter((segment) => segment !== '' && segment !== '.');
  return rest.length > 0 ? rest.join('/') : undefined;
}

/** `/srv/app/.env`: `srv/app/.env`, `app/.env`, `.env`. */
function tailsOfPath(absolute: string): string[] {
  const segments = absolute.split('/').filter((segment) => segment !== '');
  return segments.map((_, i) => segments.slice(i).join('/'));
}

/** `/etc/ssh/*`: `etc/ssh/*`, `ssh/*`, `*`; none for a negated pattern. */
function tailsOfPattern(pattern: string): string[] {
  const scan = picomatch.scan(pattern, { parts: true });
  const parts = scan.parts ?? [];
  if (scan.negated || parts[0] !== '') return [];
  return parts
    .slice(1)
    .map((_, i) => parts.slice(i + 1).join('/'))
    .filter((tail) => tail !== '');
}

/** A test of a path, with the workspace root it is relative to when known. */
export type PathTest = (path: string, workspaceRoot: string | undefined) => boolean;

export function pathMatcher(patterns: readonly string[]): PathTest {
  const options = globOptions('risks.paths');
  // `**/.env` must also match `.env` at the root and `/home/me/.env`.
  const any = picomatch([...patterns], options);
  const relative = patterns.filter((pattern) => !pattern.startsWith('/'));
  const relativeMatcher = relative.length > 0 ? picomatch(relative, options) : undefined;
  const anyRelative = (path: string) => relativeMatcher?.(path) === true;
  const tails = patterns.flatMap(tailsOfPattern);
  const anyTail = tails.length > 0 ? picomatch(tails, options) : () => false;
  /** A relative path whose root nobody knows: as written, and as if below any directory. */
  const belowUnknown = (path: string) => {
    const written = normalizedPath(path);
    const below = belowAnyDirectory(written);
    return any(written) || any(below) || anyTail(below);
  };
  return (path, workspaceRoot) => {
    // Through a `..`, a rule that could cover the rest below some directory is taken to cover it.
    const uncertain = afterLastParent(path);
    if (uncertain !== undefined && (any(uncertain) || anyTail(uncertain))) return true;
    const root = workspaceRoot === undefined ? undefined : directoryNamedBy(workspaceRoot);
    if (posix.isAbsolute(path) || root !== undefined) {
      const read = readAbsolutePath(root === undefined ? path : posix.resolve(root, path));
      if (read.kind === 'unknown') return true;
      // The process's working directory itself could be any directory.
      if (read.kind === 'belowUnknown') return read.rest === '' || belowUnknown(read.rest);
      const absolute = read.path;
      if (any(absolute)) return true;
      if (root === undefined) return tailsOfPath(absolute).some(anyRelative);
      // In lower case both: whether the file lies inside the root ignores case too.
      const inside = posix.relative(root.toLowerCase(), absolute.toLowerCase());
      return inside !== '' && inside !== '..' && !inside.startsWith('../') && anyRelative(inside);
    }
    return belowUnknown(path);
  };
}
