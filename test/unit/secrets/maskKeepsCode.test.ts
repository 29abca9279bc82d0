// A card must never read otherwise than the command runs: masking hides a secret's characters,
// never a command, an operator or a substitution. Each input below once made the card show a
// harmless command while another one ran.

import { describe, expect, it } from 'vitest';
import { ApprovalRequestParams } from '../../../src/msp/protocol.js';
import { takeRequest } from '../../../src/relay/hostEvents/intake/takeRequest.js';
import { maskSecrets } from '../../../src/secrets/maskSecrets.js';
import { CODE_HIDING_INPUTS, EVIL } from './codeHidingInputs.js';

const ID = '0198f0ac-7777-7000-8000-0000000000e1';

/** A request whose shell subject and rawArgs both carry `command`. */
function request(command: string) {
  return ApprovalRequestParams.parse({
    sessionId: '0198f0aa-1111-7000-8000-0000000000aa',
    approvalId: ID,
    turnId: 't-1',
    itemId: 'i-1',
    toolCallId: 'call-1',
    toolName: 'bash',
    rawArgs: JSON.stringify({ command }),
    subject: { kind: 'shell', command },
    currentRequirementId: { approvalId: ID, sourceIndex: 0 },
    availableChoices: [{ choiceId: 'allow_once', label: 'Allow once', decision: 'approved', scope: 'once' }],
  });
}

describe('masking never hides code', () => {
  for (const [what, command] of CODE_HIDING_INPUTS) {
    it(`keeps the command visible: ${what}`, () => {
      const taken = takeRequest(request(command), undefined);
      expect(taken.subject.command).toContain(EVIL);
      expect(JSON.parse(taken.rawArgs).command).toContain(EVIL);
      expect(maskSecrets(command).text).toContain(EVIL);
    });
  }

  it('keeps the quote that closed a header, and masks only the literal after it', () => {
    expect(maskSecrets(`curl -H 'X-Api-Key: 'abc https://ok.example; ${EVIL}`).text).toBe(
      `curl -H 'X-Api-Key: '[masked secret-value] https://ok.example; ${EVIL}`,
    );
  });

  it('shows a command substitution as it is, and still masks a literal beside it', () => {
    expect(maskSecrets(`API_TOKEN="$(cat /run/t)" PASSWORD=hunter2 ./run`)).toEqual({
      text: 'API_TOKEN="$(cat /run/t)" PASSWORD=[masked secret-value] ./run',
      count: 1,
    });
  });

  // Inside single quotes `$(` and a backtick are characters of the secret, not code: the shell
  // runs nothing there, so the value is masked whole.
  it('masks a single-quoted secret whose characters look like a substitution', () => {
    expect(maskSecrets(`PASSWORD='pa$(ss' ./run`).text).toBe(`PASSWORD='[masked secret-value]' ./run`);
    expect(maskSecrets("deploy --password='a`b$(c' x").text).toBe(
      `deploy --password='[masked secret-value]' x`,
    );
    expect(maskSecrets(`mysql -u root -p'Xy$(9z' shop`).text).toBe(
      `mysql -u root -p'[masked secret-value]' shop`,
    );
    expect(maskSecrets(JSON.stringify({ command: `PASSWORD='pa$(ss' ./run` })).text).toBe(
      JSON.stringify({ command: `PASSWORD='[masked secret-value]' ./run` }),
    );
    expect(maskSecrets(`deploy --token '$(x' --password '\`y' x`).text).toBe(
      `deploy --token '[masked secret-value]' --password '[masked secret-value]' x`,
    );
  });

  // `\$` and `\!` are how a password with `$` or `!` is typed on a command line: the shell reads
  // the escaped character as one of the word's, so the secret goes on past it.
  it('masks a secret word on past a backslash-escaped character', () => {
    expect(maskSecrets('mysql -u root -pMy\\$ecret\\! shop').text).toBe(
      'mysql -u root -p[masked secret-value] shop',
    );
    expect(maskSecrets('PASSWORD=Pa\\$\\$w0rd ./run').text).toBe('PASSWORD=[masked secret-value] ./run');
    expect(maskSecrets('deploy --password My\\&pass x').text).toBe(
      'deploy --password [masked secret-value] x',
    );
    expect(maskSecrets(JSON.stringify({ command: 'mysql -pMy\\$ecret shop' })).text).toBe(
      JSON.stringify({ command: 'mysql -p[masked secret-value] shop' }),
    );
    // A JSON escape is no shell escape: its line break still ends the value.
    expect(maskSecrets(JSON.stringify({ command: 'PASSWORD=abc\nls' })).text).toBe(
      JSON.stringify({ command: 'PASSWORD=[masked secret-value]\nls' }),
    );
  });

  // The secret is the word the shell reads (`password=abcdef`): all of its characters are
  // masked, and a quote the shell reads as structure stays in view, before the marker when it
  // closes a string before the value, after it when it does so inside the value.
  it('masks the whole word the shell reads, each quote it reads as structure kept in view', () => {
    expect(maskSecrets(`find . -name 'api_key='abc -delete`).text).toBe(
      `find . -name 'api_key='[masked secret-value] -delete`,
    );
    expect(maskSecrets(`echo "password=abc"def; ${EVIL}`).text).toBe(
      `echo "password=[masked secret-value]"; ${EVIL}`,
    );
  });

  it('keeps in view a quote the shell reads on past a line break', () => {
    // The quote `'a` opens closes on the next line: hidden, the next line's quote would read as opening.
    expect(maskSecrets("--token 'a\n--token 'b\nls").text).toBe(
      "--token [masked secret-value]'\n--token '[masked secret-value]\nls",
    );
  });
});
