import { describe, expect, it } from 'vitest';
import {
  alikeCapabilities,
  type CapabilityRequest,
  stageCapabilities,
} from '../../../../src/domain/grants/capabilities.js';
import type { Grant } from '../../../../src/domain/grants/grant.js';
import { findGrant, grantQuestion } from '../../../../src/domain/grants/match.js';
import type { ApprovalChoice, ApprovalSubject } from '../../../../src/msp/protocol.js';

// A shell grant is made of the stage's words and its workspace. Whatever else the command's text
// holds (a redirection, a here-doc, a leading assignment) is not in them: a grant for `npm test`
// must never answer `npm test > .git/hooks/pre-commit`, so such a command is never grantable.

const OUTSIDE = 'a redirection, here-doc or assignment outside its words';
const ONCE: ApprovalChoice = { choiceId: 'once', label: 'Allow once', decision: 'approved', scope: 'once' };
const NOW = new Date('2026-12-01T12:00:00Z');

function stage(sourceIndex: number, argv: string[]) {
  return {
    requirementId: { approvalId: 'a1', sourceIndex },
    position: sourceIndex + 1,
    totalStages: 1,
    argv,
    argvComplete: true,
    resolution: { kind: 'unresolved' },
  };
}

/** The command as the agent wrote it, and the words the host parsed of each stage. */
function shell(command: string, ...stages: string[][]): ApprovalSubject {
  return {
    kind: 'shell',
    command,
    workspaceRoot: '/srv/repo',
    stages: stages.map((argv, i) => stage(i, argv)),
  };
}

function request(subject: ApprovalSubject, sourceIndex = 0): CapabilityRequest {
  return {
    tool: 'bash',
    subject,
    currentRequirementId: { approvalId: 'a1', sourceIndex },
    protectedWrite: false,
  };
}

function record(subject: ApprovalSubject, sourceIndex = 0) {
  return {
    ...request(subject, sourceIndex),
    caller: 'session:s1',
    sandboxMode: 'workspace-write',
    route: 'default',
    hostId: 'main',
    slack: { channel: 'C1' },
    availableChoices: [ONCE],
  };
}

/** A grant made, before this release, for `npm test` in /srv/repo. */
const npmTestGrant: Grant = {
  grantId: 'g1',
  holder: 'bot',
  caller: 'session:s1',
  tool: 'bash',
  capabilities: ['exec:npm test', 'in:/srv/repo'],
  sandboxMode: 'workspace-write',
  route: 'default',
  grantedBy: 'U1',
  approvalId: 'a0',
  hostId: 'main',
  channel: 'C1',
  createdAt: '2026-12-01T11:00:00Z',
  expiresAt: '2026-12-01T20:00:00Z',
  uses: 0,
};

/** Each form with the words a host that leaves it out of argv would send: `npm test` alone. */
const HIDDEN: [string, string][] = [
  ['a redirection', 'npm test > .git/hooks/pre-commit'],
  ['an appending redirection', 'npm test >> .git/hooks/pre-commit'],
  ['an input redirection', 'npm test < /etc/passwd'],
  ["stderr's redirection", 'npm test 2> .git/hooks/pre-commit'],
  ['both streams redirected', 'npm test &> .git/hooks/pre-commit'],
  ['a clobbering redirection', 'npm test >| .git/hooks/pre-commit'],
  ['a redirection with no space', 'npm test>.git/hooks/pre-commit'],
  ['a here-doc', 'npm test <<EOF\nanything\nEOF'],
  ['a here-string', 'npm test <<< "$(cat ~/.ssh/id_rsa)"'],
  ['a leading assignment', 'NODE_OPTIONS=--require=/tmp/x.js npm test'],
  ['an appending assignment', 'PATH+=:/tmp/bin npm test'],
  ['a redirection a parser reads as a comment', 'npm test a#b > .git/hooks/pre-commit'],
  ['a redirection after an ANSI-C quote', "npm test $'\\'' > .git/hooks/pre-commit"],
  ['a redirection beside a stream joined', 'npm test 2>&1 > .git/hooks/pre-commit'],
  ['a redirection glued to a stream joined', 'npm test 2>&1>.git/hooks/pre-commit'],
  ['a stream sent to a file by name', 'npm test >&.git/hooks/pre-commit'],
  ['a redirection beside a quoted stream join', "npm test ' 2>&1 ' > .git/hooks/pre-commit"],
];

describe('a shell command with syntax outside its words (docs/grants.md)', () => {
  it.each(HIDDEN)('is not grantable with %s left out of argv', (_form, command) => {
    const subject = shell(command, ['npm', 'test']);
    expect(stageCapabilities(request(subject))).toEqual({
      capabilities: ['exec:npm test', 'in:/srv/repo'],
      notGrantable: OUTSIDE,
    });
    expect(alikeCapabilities(request(subject)).notGrantable).toBe(OUTSIDE);
  });

  it.each(HIDDEN)(
    'is never answered by a grant for the same words, even one made before (%s)',
    (_form, command) => {
      const plain = grantQuestion(record(shell('npm test', ['npm', 'test'])));
      expect(plain && findGrant([npmTestGrant], plain, NOW)?.grantId).toBe('g1');
      expect(grantQuestion(record(shell(command, ['npm', 'test'])))).toBeUndefined();
    },
  );

  it('is not grantable in any stage when one of them redirects: a later stage runs what it wrote', () => {
    const subject = shell('echo x > .git/hooks/pre-commit && git commit', ['echo', 'x'], ['git', 'commit']);
    expect(stageCapabilities(request(subject, 1)).notGrantable).toBe(OUTSIDE);
    expect(grantQuestion(record(subject, 1))).toBeUndefined();
  });

  it('is not grantable when argv holds a word that reads as a redirection: a quoted ">" reads the same', () => {
    for (const words of [
      ['npm', 'test', '>', 'out'],
      ['npm', 'test', '2>/dev/null'],
      ['npm', 'test', '&>log'],
      ['cat', '<<EOF'],
    ]) {
      expect(stageCapabilities(request(shell(words.join(' '), words))).notGrantable).toBe(OUTSIDE);
    }
  });

  it('still grants commands whose <, > and = are all inside their words', () => {
    const grantable: [string, string[][]][] = [
      ['npm test', [['npm', 'test']]],
      ['git status', [['git', 'status']]],
      [
        'npm test && git status',
        [
          ['npm', 'test'],
          ['git', 'status'],
        ],
      ],
      ['make CC=gcc', [['make', 'CC=gcc']]],
      ['npx vitest run --reporter=dot', [['npx', 'vitest', 'run', '--reporter=dot']]],
      ['git commit -m "a > b"', [['git', 'commit', '-m', 'a > b']]],
      ["git log --format='<%an>'", [['git', 'log', '--format=<%an>']]],
      // Joining one stream to another writes nowhere new: agents add it to most commands.
      ['npm test 2>&1', [['npm', 'test']]],
      ['npm test >&2', [['npm', 'test']]],
      [
        'npm test 2>&1 | tail -5',
        [
          ['npm', 'test'],
          ['tail', '-5'],
        ],
      ],
      ["git commit -m ' 2>&1 '", [['git', 'commit', '-m', ' 2>&1 ']]],
    ];
    for (const [command, stages] of grantable) {
      const subject = shell(command, ...stages);
      expect(stageCapabilities(request(subject, stages.length - 1)).notGrantable).toBeUndefined();
      expect(grantQuestion(record(subject, stages.length - 1))).toBeDefined();
    }
    expect(stageCapabilities(request(shell('npm test', ['npm', 'test'])))).toEqual({
      capabilities: ['exec:npm test', 'in:/srv/repo'],
    });
  });

  it('still grants a stage with no command text: its words are all there is to show', () => {
    const subject: ApprovalSubject = {
      kind: 'shell',
      workspaceRoot: '/srv/repo',
      stages: [stage(0, ['npm', 'test'])],
    };
    expect(stageCapabilities(request(subject)).notGrantable).toBeUndefined();
  });
});
