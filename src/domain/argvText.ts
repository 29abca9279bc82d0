/**
 * A stage's words joined by single spaces, as docs/grants.md writes them; a word that holds
 * whitespace, a quote or a backslash, or is empty, is JSON-quoted so that `["rm", "-rf /"]` and
 * `["rm", "-rf", "/"]` never read the same. The card and "View full" show a stage this way too, so
 * a word holding a line break or spaces (`bash -c 'echo hi⏎rm -rf ~'`) reads as one word, on one line.
 */
export function argvText(argv: readonly string[]): string {
  return argv.map(argvWord).join(' ');
}

function argvWord(word: string): string {
  return word === '' || /[\s"'\\]/.test(word) ? JSON.stringify(word) : word;
}
