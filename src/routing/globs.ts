import picomatch from 'picomatch';

// How each list of globs in COUNTERSIGN_CONFIG is compiled (picomatch), in one place: the matchers
// here and the file's checks at start-up must read a pattern alike, or a pattern checked there
// would match otherwise here.
//
// - Every glob matches dot files and dot directories: `**/.env`, `/srv/**` covers `/srv/.git`.
// - Where a value is text rather than a path (a command, a title, an argument), `*` crosses "/".
// - Risk rules ignore case in every field. On macOS and Windows `/srv/app/.ENV` is the file
//   `/srv/app/.env`, and `/usr/bin/GIT` runs git; where it is another file or program (Linux), a
//   rule that covers it only asks once too often. Tools and commands are read so too: a host's
//   tool `Deploy_prod` is `deploy_*` to whoever wrote the rule.
// - Routes read `tools` and `workspaces` as written. Routes are first-match: ignoring case could
//   as well send a request to an earlier, more open route as to a stricter one (on Linux,
//   `/home/me/Scratch` is not `/home/me/scratch`), so there is no side to err on. Titles are
//   free text and ignore case. docs/routing.md says what a route's author should do instead.

/** A list of globs in the config file, by where it stands. */
export type GlobField =
  | 'risks.commands'
  | 'risks.paths'
  | 'risks.programs.args'
  | 'risks.targets'
  | 'risks.tools'
  | 'routes.sessionTitles'
  | 'routes.tools'
  | 'routes.workspaces';

/**
 * The picomatch options a field's globs are compiled with. `risks.targets` patterns are compiled
 * as hostPattern() writes them (hostNames.ts).
 */
export function globOptions(field: GlobField): picomatch.PicomatchOptions {
  switch (field) {
    case 'risks.commands':
    case 'risks.programs.args':
      return { dot: true, bash: true, nocase: true };
    case 'risks.paths':
    case 'risks.targets':
    case 'risks.tools':
      return { dot: true, nocase: true };
    case 'routes.sessionTitles':
      return { dot: true, bash: true, nocase: true };
    case 'routes.tools':
    case 'routes.workspaces':
      return { dot: true };
  }
}

/**
 * Whether `pattern` compiles with `options`. An invalid one (`*.{pem,key`, `[a-Z]`) does not fail
 * in picomatch: it silently becomes a pattern that matches nothing, so a risk rule would ask
 * nothing and a restricted route would let its requests fall through to the next. `debug` makes
 * picomatch throw instead.
 */
export function isValidGlob(pattern: string, options: picomatch.PicomatchOptions): boolean {
  try {
    picomatch.makeRe(pattern, { ...options, debug: true });
    return true;
  } catch {
    return false;
  }
}
