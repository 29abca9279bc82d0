import { type ParseEntry, parse } from 'shell-quote';
import { isUnknownWord } from './argv.js';

// A command line as the shell would split it, for the risk rules that look at a program's argv
// (programs.ts) when the host sent only the command text, or when a program hands a string to a
// shell (`sh -c '…'`, `eval '…'`). Quoting and escapes are shell-quote's; what a rule needs on
// top is where one simple command ends and the next begins.

/** `$NAME` is kept as written: the bot does not know the agent's environment. */
const keepVariable = (name: string) => `$${name}`;

/** Text shell-quote cannot split (such as a `${` left open): no one can say what it runs. */
export class UnreadableCommand extends Error {}

function tokensOf(text: string): ParseEntry[] {
  try {
    return parse(text, keepVariable);
  } catch (error) {
    throw new UnreadableCommand(error instanceof Error ? error.message : String(error));
  }
}

/** Operators whose next word names a file or a descriptor, not an argument of the command. */
const REDIRECTIONS = new Set(['>', '>>', '<', '>&', '<&', '<<', '<<<', '<>', '>|', '&>', '&>>']);

/**
 * What stands in the command around a substitution for it: `$(…)` is zero or more words the bot
 * cannot know (argv.ts reads it so), a process substitution one file name.
 */
const COMMAND_SUBSTITUTION = '$(…)';
const PROCESS_SUBSTITUTIONS = new Map([
  ['<(', '<(…)'],
  ['>(', '>(…)'],
]);

const STAND_INS: ReadonlySet<string> = new Set([COMMAND_SUBSTITUTION, ...PROCESS_SUBSTITUTIONS.values()]);

/** Whether a word of a command is the stand-in for a substitution, not a word of the text. */
export function isSubstitutionStandIn(word: string): boolean {
  return STAND_INS.has(word);
}

const isOpenParen = (token: ParseEntry | undefined) =>
  typeof token === 'object' && 'op' in token && token.op === '(';

/**
 * One line's simple commands: split at `&&`, `||`, `;`, `|`, `&`, `(`, `)`, `#`. A substitution
 * (`$(…)`, `<(…)`, `>(…)`) is a command of its own, and the command around it reads on past it
 * (`git push $(git remote) --force` is one push with --force). Each command is listed where its
 * first word is, so the outer one comes before the one inside it (`env -S` reads them in order).
 */
function commandsOfTokens(tokens: readonly ParseEntry[]): string[][] {
  const commands: string[][] = [];
  let words: string[] = [];
  // The words after the last substitution closed, also read as a command of their own: a ")"
  // that is not the substitution's (a `case` pattern's inside `$(…)`) closes it too early, and
  // then the words after it are still looked at as a command. That can only add commands to
  // look at, never hide one.
  let tail: string[] | undefined;
  // Whether the tail is a guess: no `case` was read in the substitution, so its ")" was its own.
  // A guessed tail takes no word that may stand for others as its program: in `echo $(date)
  // $HOME` nothing runs `$HOME`. After a `case`, `$(printf git) push` may be a command inside.
  let tailGuessed = false;
  // The outer commands of the substitutions open; null for a subshell `(…)`, which ends one.
  const outers: (string[] | null)[] = [];
  // For each of `outers`, whether a `case` was read inside it.
  const withCase: boolean[] = [];
  let skipNext = false;
  const add = (word: string) => {
    const guessedProgram = tailGuessed && tail?.length === 0 && isUnknownWord(word);
    for (const command of tail && !guessedProgram ? [words, tail] : [words]) {
      if (command.length === 0) commands.push(command);
      command.push(word);
    }
  };
  const dropLastWord = () => {
    for (const command of tail?.length ? [words, tail] : [words]) {
      command.pop();
      // Listed at its first word, and nothing listed since: it is the last one listed.
      if (command.length === 0) commands.pop();
    }
  };
  const end = () => {
    words = [];
    tail = undefined;
  };
  for (const [i, token] of tokens.entries()) {
    if (typeof token === 'string') {
      // `$(…)` comes out as "$" then "(": the substitution is read at the "(".
      if (token === '$' && isOpenParen(tokens[i + 1])) continue;
      if (token === 'case') withCase.fill(true);
      if (skipNext) skipNext = false;
      else add(token);
    } else if ('comment' in token) {
      end();
    } else if (token.op === 'glob') {
      // A file name pattern after a redirection (`>*.log`) is its file, as a plain word is.
      if (skipNext) skipNext = false;
      else add(token.pattern);
    } else if (REDIRECTIONS.has(token.op)) {
      // `git push >log --force` is still one command, with --force. A descriptor's number
      // before the operator (`2>/dev/null`) is the redirection's, no argument: shell-quote gives
      // no spacing, so a lone number just before one is taken for a descriptor.
      if (/^\d+$/.test(words.at(-1) ?? '') && tokens[i - 1] === words.at(-1)) dropLastWord();
      skipNext = true;
    } else {
      const placeholder =
        token.op === '(' && tokens[i - 1] === '$'
          ? COMMAND_SUBSTITUTION
          : PROCESS_SUBSTITUTIONS.get(token.op);
      if (placeholder !== undefined) {
        // A redirection's file name (`>$(mktemp)`) is no word of the command.
        if (skipNext) skipNext = false;
        else add(placeholder);
        outers.push(words);
        withCase.push(false);
        end();
      } else if (token.op === '(') {
        outers.push(null);
        withCase.push(false);
        end();
      } else if (token.op === ')') {
        const outer = outers.pop();
        const hadCase = withCase.pop() === true;
        end();
        if (outer) {
          words = outer;
          tail = [];
          tailGuessed = !hadCase;
        }
      } else {
        end();
      }
    }
  }
  return commands;
}

/**
 * The simple commands of a command line, each as the argv its program would get (variables
 * unexpanded). A newline also ends a command, and shell-quote reads a `#` comment to the end of
 * the text, so each line is split on its own as well: a command that spans lines inside quotes
 * may then also be read as pieces. That can only add commands to look at, never hide one.
 * Throws UnreadableCommand when the text cannot be split.
 */
export function shellCommands(text: string): string[][] {
  const lines = text.includes('\n') ? [text, ...text.split('\n')] : [text];
  return lines.flatMap((line) => commandsOfTokens(tokensOf(line)));
}

/** The words of a string such as `env -S`'s: its operators, if any, are dropped. */
export function shellWords(text: string): string[] {
  return commandsOfTokens(tokensOf(text)).flat();
}
