import { type ParseEntry, parse } from 'shell-quote';

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

/** One line's simple commands: split at `&&`, `||`, `;`, `|`, `&`, `(`, `)`, `<(`… */
function commandsOfTokens(tokens: readonly ParseEntry[]): string[][] {
  const commands: string[][] = [];
  let words: string[] = [];
  let skipNext = false;
  const end = () => {
    if (words.length > 0) commands.push(words);
    words = [];
  };
  for (const [i, token] of tokens.entries()) {
    if (typeof token === 'string') {
      if (skipNext) skipNext = false;
      else words.push(token);
    } else if ('comment' in token) {
      end();
    } else if (token.op === 'glob') {
      words.push(token.pattern);
    } else if (REDIRECTIONS.has(token.op)) {
      // `git push >log --force` is still one command, with --force. A descriptor's number
      // before the operator (`2>/dev/null`) is the redirection's, no argument: shell-quote gives
      // no spacing, so a lone number just before one is taken for a descriptor.
      if (/^\d+$/.test(words.at(-1) ?? '') && tokens[i - 1] === words.at(-1)) words.pop();
      skipNext = true;
    } else {
      // `$(…)` comes out as "$" then "(": the "$" is no word of the command before it.
      if (token.op === '(' && words.at(-1) === '$') words.pop();
      end();
    }
  }
  end();
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
