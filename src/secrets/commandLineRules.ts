import { CF, cfAuthPasswordIndex } from './cfSecrets.js';
import { CommandWords, subcommandEnd } from './commandWords.js';
import { HTDBM, HTPASSWD, passwordSecret, takesPasswordArgument } from './htpasswdSecrets.js';
import {
  anyCase,
  atNameStart,
  atStart,
  atWordStart,
  BLANKS,
  flagGap,
  JSON_ITEM_GAP,
  quotedOrBare,
  type Span,
  type WordPattern,
  wordPattern,
} from './ruleParts.js';
import { VAULT, vaultLoginSecrets } from './vaultSecrets.js';

// Secrets given on a command line as a flag's value: `--password hunter2`, `mysql -phunter2`,
// `curl -u admin:hunter2`, `aws configure set aws_secret_access_key X`. The same vocabulary
// masks a command written as text (maskSecrets.ts) and an argv, whose words come apart
// (argvSecrets.ts).
//
// A long flag is secret when its last word is (`--client-secret`, `--auth-token`), so a flag
// naming where a secret lives (`--password-file`, `--token-env`) keeps its value: a path or a
// name. A boolean flag (`--no-password`, `--ask-password`, `--with-token`) takes no value.
// Short flags mean a password only for some programs (`-p` is a port for ssh and `docker run`, a
// profile elsewhere), so they are masked only after one of those programs' names, in the same
// command, and for some only when the program is given a subcommand too: `docker login -p` is a
// password, `docker run --name login -p` a port.

const SECRET_FLAG_WORDS = [
  'passw(?:or)?d',
  'passphrase',
  'secret',
  'token',
  'api-?key',
  'access-?key',
  'secret-?key',
];

/** Names whose value follows after a blank (`aws configure set aws_secret_access_key X`). */
const SECRET_NAMES = ['aws_secret_access_key', 'aws_session_token'];

/** After `--`: not a boolean flag, then words, the last one secret. */
const LONG_SECRET_FLAG_TAIL = `(?!(?:no|ask|prompt|with|show|print)-)(?:[A-Za-z0-9]{1,40}-){0,6}(?:${SECRET_FLAG_WORDS.map(anyCase).join('|')})`;
const SECRET_NAME = `(?:${SECRET_NAMES.map(anyCase).join('|')})`;

/** A whole word that is a long flag or a name whose value, the next word, is a secret. */
export const SECRET_FLAG_WORD = new RegExp(`^(?:--${LONG_SECRET_FLAG_TAIL}|${SECRET_NAME})$`);

/**
 * `--password hunter2`, `"--token", "x"` in a JSON argv, `aws_secret_access_key X`: a rule of
 * secretRules.ts. With `=` its key-value rule masks the value.
 */
export const SECRET_FLAG_RULE = {
  label: 'secret-value',
  source: `(?:${atNameStart('--')}${LONG_SECRET_FLAG_TAIL}|${atWordStart(SECRET_NAME)})${flagGap('Flag')}`,
};

/**
 * What part of a program flag's value is secret: `afterColon` the password of `user:password`,
 * `afterPercent` of smbclient's `user%password`, `afterPass` the literal of openssl's `pass:X`
 * (its `env:`, `file:` and `fd:` name where the password lives, and are kept).
 */
type SecretPart = 'whole' | 'afterColon' | 'afterPercent' | 'afterPass' | 'cookie';

/** Flags that carry a secret for some programs only. */
export interface ProgramFlag {
  /** Program names, as the file is called (`/usr/bin/curl` is curl). */
  programs: readonly string[];
  /**
   * `-x` (its value glued, or the next word when `nextWord`), or a longer flag or key (`--long`,
   * openssl's `-passin`, rclone's `secret_access_key`): `=value` or the next word.
   */
  flags: readonly string[];
  /** Whether a short flag's value may be the next word; `mysql -p` alone prompts instead. */
  nextWord: boolean;
  /** Which part of the value is secret; `cookie`: only a value holding `=`. */
  secret: SecretPart;
  /**
   * The subcommand the program must be given for the flag to be secret (`login`, `registry
   * login`): `docker login -p` is a password, `docker run -p` a port.
   */
  subcommand?: readonly string[];
}

const MYSQL_PROGRAMS = [
  'mysql',
  'mysqldump',
  'mysqladmin',
  'mysqlimport',
  'mysqlshow',
  'mysqlcheck',
  'mysqlpump',
  'mysqlslap',
  'mysqlbinlog',
  'mariadb',
  'mariadb-dump',
  'mariadb-admin',
  'mariadb-import',
  'mariadb-show',
  'mariadb-check',
];

/**
 * Programs whose `login` takes the password as `-p` (`az login -p` for a service principal's
 * secret); helm's is `helm registry login`. Their `--password` is masked for any program.
 */
const LOGIN_PROGRAMS = ['docker', 'podman', 'nerdctl', 'buildah', 'skopeo', 'oras', 'az', 'oc', 'cf'];

export const PROGRAM_FLAGS: readonly ProgramFlag[] = [
  { programs: MYSQL_PROGRAMS, flags: ['-p'], nextWord: false, secret: 'whole' },
  { programs: ['curl'], flags: ['-u', '-U', '--user', '--proxy-user'], nextWord: true, secret: 'afterColon' },
  { programs: ['curl'], flags: ['-b', '--cookie'], nextWord: true, secret: 'cookie' },
  { programs: ['redis-cli'], flags: ['-a', '--pass'], nextWord: true, secret: 'whole' },
  { programs: ['sshpass'], flags: ['-p'], nextWord: true, secret: 'whole' },
  { programs: LOGIN_PROGRAMS, flags: ['-p'], nextWord: true, secret: 'whole', subcommand: ['login'] },
  { programs: ['helm'], flags: ['-p'], nextWord: true, secret: 'whole', subcommand: ['registry', 'login'] },
  // `cf l` is cf's own short name for `cf login`.
  { programs: ['cf'], flags: ['-p'], nextWord: true, secret: 'whole', subcommand: ['l'] },
  { programs: ['openssl'], flags: ['-pass', '-passin', '-passout'], nextWord: true, secret: 'afterPass' },
  // `--password` is masked for any program.
  { programs: ['zip', 'unzip'], flags: ['-P'], nextWord: true, secret: 'whole' },
  // 7-Zip's `-p` alone prompts.
  { programs: ['7z', '7za', '7zr', '7zz'], flags: ['-p'], nextWord: false, secret: 'whole' },
  { programs: ['smbclient'], flags: ['-U', '--user'], nextWord: true, secret: 'afterPercent' },
  // `-N` the new passphrase, `-P` the old one.
  { programs: ['ssh-keygen'], flags: ['-N', '-P'], nextWord: true, secret: 'whole' },
  ...['create', 'update'].map((verb) => ({
    programs: ['rclone'],
    flags: ['secret_access_key'],
    nextWord: true,
    secret: 'whole' as const,
    subcommand: ['config', verb],
  })),
];

const SHORT_FLAG = /^-[A-Za-z0-9]$/;

/** A flag that is not one dash and one letter: its value is never glued to it. */
export function isLongFlag(flag: string): boolean {
  return !SHORT_FLAG.test(flag);
}

function escaped(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&');
}

/** Longest first, so that `mariadb-dump` is tried before `mariadb`. */
function alternatives(words: Iterable<string>): string {
  return [...new Set(words)]
    .sort((a, b) => b.length - a.length)
    .map(escaped)
    .join('|');
}

/**
 * The user name of `user:password` (`user%password` for smbclient) and its separator, kept: bare,
 * or with quoted parts the shell joins to it (`"user":x`). Bare and quoted parts alternate, so it
 * is read one way only, and a few of them are more than any user name has: a flag whose value
 * holds no separator costs a short scan. A quoted part holds no `,` either, so that it never
 * reaches into the next item of a JSON argv (`"-u","admin","https://x:80"`).
 */
function userLead(separator: ':' | '%'): string {
  const run = `[^\\s${separator}"'\\\\;&|()<>]{1,256}`;
  const quoted = `(?:'[^'${separator}\\r\\n]{0,64}'|"[^"${separator},\\\\\\r\\n]{0,64}")`;
  return `(?:${run})?(?:${quoted}(?:${run})?){0,8}${separator}`;
}

/** The value of a program flag, the part to mask in a group named `secret…`. */
function programValue(secret: SecretPart): string {
  switch (secret) {
    case 'whole':
      return quotedOrBare('');
    case 'cookie':
      return `(?=\\\\?["']?[^\\s"'\\\\=]{1,256}=)${quotedOrBare('')}`;
    case 'afterColon':
      return quotedOrBare('', userLead(':'));
    case 'afterPercent':
      return quotedOrBare('', userLead('%'));
    case 'afterPass':
      return quotedOrBare('', 'pass:');
  }
}

/** Between a flag and its value when that is the next word: blanks, or the next JSON array item. */
const NEXT_WORD = `(?:${BLANKS}|${JSON_ITEM_GAP})`;

/**
 * Where a value glued to a short flag may start: not at the quote that closes the flag's JSON
 * item (`"-p","shop"`), which would read `","shop` as the value.
 */
const GLUED = `(?!${JSON_ITEM_GAP})`;

/** A program flag's value, matched right where the flag ends (sticky). */
function valueAfter(entry: ProgramFlag, flag: string): WordPattern {
  let gap = GLUED;
  if (isLongFlag(flag)) gap = `(?:=|${NEXT_WORD})`;
  else if (entry.nextWord) gap = `(?:${NEXT_WORD}|${GLUED})`;
  return wordPattern(`${gap}${programValue(entry.secret)}`, 'y');
}

const ALL_FLAGS = PROGRAM_FLAGS.flatMap((entry) => entry.flags);
const PROGRAM_NAMES = alternatives([
  ...PROGRAM_FLAGS.flatMap((entry) => entry.programs),
  HTPASSWD,
  HTDBM,
  VAULT,
]);
const LONG_FLAGS = alternatives(ALL_FLAGS.filter(isLongFlag));
const SHORT_FLAGS = alternatives(ALL_FLAGS.filter((flag) => !isLongFlag(flag)));

/** For each program name, its entries of PROGRAM_FLAGS. */
const ENTRIES_OF = new Map<string, ProgramFlag[]>();
for (const entry of PROGRAM_FLAGS) {
  for (const program of entry.programs) ENTRIES_OF.set(program, [...(ENTRIES_OF.get(program) ?? []), entry]);
}

/** Whether a text names any program of PROGRAM_FLAGS, htpasswd, htdbm or vault: only then is it scanned. */
const ANY_PROGRAM = new RegExp(`(?:${PROGRAM_NAMES})(?![A-Za-z0-9_-])`);

/**
 * What ends a command (a line, `;`, `&`, `|`) in group 1, a program's name in group 2, or one of
 * the flags in group 3: a long flag whole (`--user`, not `--user-agent`), a short one perhaps
 * with its value glued. The groups are numbered, not named: V8 builds a groups object for every
 * match of an expression with named groups, and a text of program names matches at every word.
 */
const SCAN = new RegExp(
  `([\\n;&|])` +
    `|(${atStart(`(?:${PROGRAM_NAMES})`, 'A-Za-z0-9_.-')}(?![A-Za-z0-9_-]))` +
    `|(${atNameStart(`(?:(?:${LONG_FLAGS})(?![A-Za-z0-9_-])|${SHORT_FLAGS})`)})`,
  'g',
);

interface Candidate {
  entry: ProgramFlag;
  value: WordPattern;
}

/** For each flag, the entries it is secret for and how its value is read, in table order. */
const CANDIDATES = new Map<string, Candidate[]>();
for (const entry of PROGRAM_FLAGS) {
  for (const flag of entry.flags) {
    const list = CANDIDATES.get(flag) ?? [];
    list.push({ entry, value: valueAfter(entry, flag) });
    CANDIDATES.set(flag, list);
  }
}

/**
 * Whether the flags of `entry` are secret after its program's name, the words after that name
 * given by `wordAt`: always, or once the program was given the entry's subcommand.
 */
export function programFlagsApply(entry: ProgramFlag, wordAt: (i: number) => unknown): boolean {
  return entry.subcommand === undefined || subcommandEnd(entry.subcommand, wordAt) !== undefined;
}

/** The password of `cf auth`, the words after cf's name given by `after`. */
function cfAuthPassword(after: (i: number) => Span | undefined): Span | undefined {
  const index = cfAuthPasswordIndex((i) => after(i)?.value);
  const password = index === undefined ? undefined : after(index);
  return password?.value === '' ? undefined : password;
}

/** A part of a word quoted whole (`"a b"` of `password="a b"`). */
const QUOTED_WHOLE = /^(?:'[^']*'|"(?:[^"\\]|\\.)*")$/;

/** `span` without the quotes around it, if it is quoted whole: they stay, as around a word quoted whole. */
function insideQuotes(span: Span): Span {
  if (!QUOTED_WHOLE.test(span.value)) return span;
  return { start: span.start + 1, end: span.end - 1, value: span.value.slice(1, -1) };
}

/** The value of `flag`, written at `at`, for the first entry in `applying` it is secret for. */
function flagValue(text: string, flag: string, at: number, applying: Set<ProgramFlag>): Span | undefined {
  for (const candidate of CANDIDATES.get(flag) ?? []) {
    if (!applying.has(candidate.entry)) continue;
    candidate.value.pattern.lastIndex = at + flag.length;
    const value = candidate.value.pattern.exec(text);
    const span = value && candidate.value.spanOf(value);
    if (span) return span;
  }
  return undefined;
}

/**
 * [start, end) and text of each secret given to a program flag (`mysql -phunter2`,
 * `curl -u admin:hunter2`, `docker login -p hunter2`), to htpasswd or htdbm after its file and
 * user, to `cf auth` after the user, or to `vault login`, left to right. One pass: a flag counts after its program's name in
 * the same command (and its subcommand, if it needs one, read from the few words after the
 * name), and its value is read where the flag ends, every repeat bounded. Words are read once
 * however many names share them.
 */
export function programFlagSecrets(text: string): Span[] {
  const found: Span[] = [];
  const first = ANY_PROGRAM.exec(text);
  if (first === null) return found;
  const words = new CommandWords(text);
  // The entries whose flags are secret in this command so far.
  const applying = new Set<ProgramFlag>();
  SCAN.lastIndex = first.index;
  for (let match = SCAN.exec(text); match !== null; match = SCAN.exec(text)) {
    const end = match[1];
    const program = match[2];
    const flag = match[3];
    if (end !== undefined) applying.clear();
    else if (program !== undefined && takesPasswordArgument(program)) {
      const span = passwordSecret(program, words.after(match.index + program.length));
      if (span) {
        found.push(span);
        SCAN.lastIndex = span.end;
      }
    } else if (program === VAULT) {
      const after = words.after(match.index + program.length);
      for (const { index, from } of vaultLoginSecrets((i) => after(i)?.value)) {
        const word = after(index)!;
        found.push(insideQuotes({ start: word.start + from, end: word.end, value: word.value.slice(from) }));
        SCAN.lastIndex = word.end;
      }
    } else if (program !== undefined) {
      const after = words.after(match.index + program.length);
      const password = program === CF ? cfAuthPassword(after) : undefined;
      if (password) {
        found.push(password);
        SCAN.lastIndex = password.end;
      }
      for (const entry of ENTRIES_OF.get(program) ?? []) {
        if (programFlagsApply(entry, (i) => after(i)?.value)) applying.add(entry);
      }
    } else if (flag !== undefined) {
      // `-passw0rd` after mysql is `-p` and its value, not openssl's `-pass`.
      const span =
        flagValue(text, flag, match.index, applying) ??
        (flag.length > 2 && !isLongFlag(flag.slice(0, 2))
          ? flagValue(text, flag.slice(0, 2), match.index, applying)
          : undefined);
      if (span) {
        found.push(span);
        SCAN.lastIndex = span.end;
      }
    }
  }
  return found;
}
