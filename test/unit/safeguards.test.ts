// Risk rules and quorums, below the bot: what the file may say, what a rule matches, who may
// decide a matching request, how votes are kept, and what the card shows.

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderCard } from '../../src/cards/renderCard.js';
import { quorumLines, riskLines } from '../../src/cards/renderSafeguards.js';
import { notAuthorizedText } from '../../src/cards/renderUserMessages.js';
import { ConfigError, loadConfig } from '../../src/config/config.js';
import { authorize } from '../../src/domain/authorization.js';
import { grantQuestion } from '../../src/domain/grants/match.js';
import { type ApprovalRecord, principalsFor, type Vote } from '../../src/domain/record.js';
import { OPEN_RULES } from '../../src/domain/route.js';
import type { ApprovalSubject } from '../../src/msp/protocol.js';
import { unvoted, voted, withCurrentVotes } from '../../src/relay/records/cardMutations.js';
import { riskMarked } from '../../src/relay/records/recordMutations.js';
import { normalizedPath } from '../../src/routing/pathSpelling.js';
import { RiskRules } from '../../src/routing/risks.js';
import { Router } from '../../src/routing/router.js';
import { inPhase, NOW, shellRecord } from '../support/cardFixtures.js';
import { FAKE_SLACK_APP_TOKEN, FAKE_SLACK_BOT_TOKEN } from '../support/fakeSecrets.js';
import { ISSUE_RISKS } from '../support/issueRisks.js';
import { shellSubject } from '../support/shellSubject.js';
import { NO_REDIS_PASSWORD } from '../support/testRedis.js';

function configFile(yaml: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'countersign-risks-')), 'countersign.yml');
  writeFileSync(file, yaml);
  return file;
}

function load(yaml: string) {
  return loadConfig({
    SLACK_BOT_TOKEN: FAKE_SLACK_BOT_TOKEN,
    SLACK_APP_TOKEN: FAKE_SLACK_APP_TOKEN,
    MSP_HOST_COMMAND: 'muse serve',
    SLACK_CHANNEL: 'C0APPROVALS',
    COUNTERSIGN_CONFIG: configFile(yaml),
    ...NO_REDIS_PASSWORD,
  });
}

function errorOf(yaml: string): string {
  try {
    load(yaml);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).not.toMatch(/\n/);
    return (error as ConfigError).message;
  }
  throw new Error('expected the file to be refused');
}

const shell = shellSubject;

const file = (path: string): ApprovalSubject => ({ kind: 'fileAccess', path, access: 'write' });
const network = (host: string): ApprovalSubject => ({ kind: 'network', host, port: 443, protocol: 'https' });

describe('the risks key of COUNTERSIGN_CONFIG', () => {
  it('loads the issue’s example as it is written', () => {
    const config = load(ISSUE_RISKS);
    expect(config.risks).toEqual([
      {
        name: 'force-push',
        match: { commands: ['git push --force*', 'git push -f*', 'kubectl delete *'] },
        warning: 'Rewrites shared history',
        quorum: 2,
      },
      {
        name: 'secrets',
        match: { paths: ['**/.env', '/etc/**', '**/*.pem'] },
        warning: 'Touches secrets',
        approvers: { users: [], usergroups: ['S0SECURITY'] },
      },
      {
        name: 'production',
        match: { targets: ['*.prod.example.com'], tools: ['deploy_*'] },
        warning: 'Production',
      },
    ]);
  });

  it('a route takes a quorum; without one it is 1', () => {
    const config = load(
      'routes:\n  - { name: two, channel: C0TWO, match: { tools: [deploy] }, quorum: 2 }\n  - { name: one, channel: C0ONE }\n',
    );
    const router = new Router(config.routes, 'C0APPROVALS');
    expect(router.rulesOf('two')?.quorum).toBe(2);
    expect(router.rulesOf('one')?.quorum).toBe(1);
    // One person's "don't ask again" would skip the second pair of eyes: no grants there.
    expect(router.grantsOf('two')?.enabled).toBe(false);
    expect(router.grantsOf('one')?.enabled).toBe(true);
  });

  it.each([
    ['risks:\n  - { name: x, match: { tools: [a] } }\n', 'risks[0].warning is required'],
    ['risks:\n  - { name: x, warning: w }\n', 'risks[0].match is required'],
    [
      'risks:\n  - { name: x, warning: w, match: {} }\n',
      'risks[0].match must list at least one of commands, paths, programs, targets and tools',
    ],
    [
      'risks:\n  - { name: x, warning: w, match: { command: [a] } }\n',
      'risks[0].match: key "command" is not supported',
    ],
    [
      'risks:\n  - { name: x, warning: w, match: { tools: [a] }, quorum: 0 }\n',
      'risks[0].quorum must be a whole number from 1 to 10 (got 0)',
    ],
    [
      'routes:\n  - { channel: C0A, quorum: 1.5 }\n',
      'routes[0].quorum must be a whole number from 1 to 10 (got 1.5)',
    ],
    [
      'risks:\n  - { name: x, warning: w, match: { tools: [a] }, approvers: { users: [alice] } }\n',
      'risks[0].approvers.users[0] must be a Slack user ID',
    ],
    [
      'risks:\n  - { name: x, warning: w, match: { tools: [a] } }\n  - { name: x, warning: v, match: { tools: [b] } }\n',
      'risks[1].name "x" is used by an earlier rule: names must be unique',
    ],
  ])('%j is refused in one line naming its place', (yaml, message) => {
    expect(errorOf(yaml)).toContain(message);
  });
});

describe('what a risk rule matches', () => {
  const rules = new RiskRules(load(ISSUE_RISKS).risks);
  const names = (tool: string, subject: ApprovalSubject) =>
    rules.marksFor({ tool, subject }).map((m) => m.name);

  it('commands: a glob on any shell stage’s argv joined by spaces, across "/"', () => {
    expect(names('bash', shell(['npm', 'test'], ['git', 'push', '--force', 'origin', 'main']))).toEqual([
      'force-push',
    ]);
    expect(names('bash', shell(['git', 'push', '-f']))).toEqual(['force-push']);
    expect(names('bash', shell(['kubectl', 'delete', 'pod/web-1']))).toEqual(['force-push']);
    expect(names('bash', shell(['git', 'push', 'origin', 'main']))).toEqual([]);
    // The command itself when the host sent no stages.
    expect(names('bash', { kind: 'shell', command: 'git push --force-with-lease' })).toEqual(['force-push']);
    // A command is only looked for in shell subjects. (The path is absolute: a relative one
    // with no known root could lie below /etc, which the secrets rule covers.)
    expect(names('bash', file('/srv/git push --force'))).toEqual([]);
  });

  it('paths: a glob on the file path, normalized first', () => {
    expect(names('write_file', file('/home/me/app/.env'))).toEqual(['secrets']);
    expect(names('write_file', file('.env'))).toEqual(['secrets']);
    expect(names('write_file', file('/etc/ssh/sshd_config'))).toEqual(['secrets']);
    expect(names('write_file', file('/srv/tls/server.pem'))).toEqual(['secrets']);
    // `..` cannot walk a path out of a rule's reach, nor doubled slashes.
    expect(names('write_file', file('/srv/app/../../etc/passwd'))).toEqual(['secrets']);
    expect(names('write_file', file('/srv//app/./.env'))).toEqual(['secrets']);
    expect(names('write_file', file('/srv/app/README.md'))).toEqual([]);
    expect(normalizedPath('/etc/ssh/')).toBe('/etc/ssh');
  });

  it('targets and tools: each field must match (AND), as in routes', () => {
    expect(names('deploy_api', network('api.prod.example.com'))).toEqual(['production']);
    expect(names('deploy_api', network('API.PROD.example.com'))).toEqual(['production']);
    expect(names('fetch', network('api.prod.example.com'))).toEqual([]);
    expect(names('deploy_api', network('api.staging.example.com'))).toEqual([]);
  });

  it('several rules may match one request; each is named once, in the file’s order', () => {
    const both = new RiskRules([
      { name: 'push', match: { commands: ['git push*'] }, warning: 'Pushes' },
      { name: 'git', match: { commands: ['git *'] }, warning: 'Git', quorum: 3 },
    ]);
    expect(both.marksFor({ tool: 'bash', subject: shell(['git', 'push']) })).toEqual([
      { name: 'push', warning: 'Pushes' },
      { name: 'git', warning: 'Git', quorum: 3 },
    ]);
  });
});

describe('risk rules on a later question of the same approval', () => {
  const push = { name: 'push', warning: 'Pushes' };
  const git = { name: 'git', warning: 'Git', quorum: 3 };

  it('adds the rules it matches now to those it had, never removes one, and reads the record’s tool', () => {
    const record = { ...shellRecord(2), risks: [push] };
    const tools: string[] = [];
    const next = riskMarked((tool) => {
      tools.push(tool);
      return [git];
    })(record);
    expect(next?.risks).toEqual([push, git]);
    expect(tools).toEqual(['bash']);
    // Matching nothing now does not loosen it, and matching what it had changes nothing.
    expect(riskMarked(() => [])(record)).toBeUndefined();
    expect(riskMarked(() => [push])(record)).toBeUndefined();
  });

  it('leaves a final approval alone', () => {
    expect(riskMarked(() => [git])(inPhase(shellRecord(2), 'resolved'))).toBeUndefined();
  });
});

describe('who may decide a request a risk rule matched', () => {
  const security = { risk: 'secrets', approvers: { users: [], usergroups: ['S0SECURITY'] } };
  const route = {
    route: 'ops',
    rules: { ...OPEN_RULES, approvers: { users: ['U0ALICE'], usergroups: [] } },
    protectedWrite: false,
  };

  it('only the rule’s approvers: not the route’s, not an admin', () => {
    const authority = { ...route, riskApprovers: [security] };
    expect(authorize(authority, 'U0SEC', ['U0ADMIN'], new Set(['S0SECURITY']))).toEqual({
      allowed: true,
      because: 'usergroup',
      usergroup: 'S0SECURITY',
    });
    const alice = authorize(authority, 'U0ALICE', ['U0ADMIN'], new Set());
    expect(alice).toMatchObject({ allowed: false, why: 'notRiskApprover', risk: 'secrets' });
    expect(authorize(authority, 'U0ADMIN', ['U0ADMIN'], new Set())).toMatchObject({ allowed: false });
    expect(notAuthorizedText(alice as never)).toBe(
      'This request matches the risk rule secrets: only members of <!subteam^S0SECURITY> can decide it.',
    );
  });

  it('two rules naming approvers: one must be allowed by both', () => {
    const authority = {
      ...route,
      riskApprovers: [security, { risk: 'prod', approvers: { users: ['U0SEC'], usergroups: [] } }],
    };
    expect(authorize(authority, 'U0SEC', [], new Set(['S0SECURITY'])).allowed).toBe(true);
    expect(authorize(authority, 'U0SEC2', [], new Set(['S0SECURITY']))).toMatchObject({ risk: 'prod' });
  });

  it('without such a rule, the route’s rules apply as before', () => {
    expect(authorize(route, 'U0ALICE', [], new Set()).allowed).toBe(true);
    expect(authorize(route, 'U0SEC', [], new Set(['S0SECURITY'])).allowed).toBe(false);
  });
});

describe('votes toward a quorum', () => {
  const vote = (userId: string, choiceId = 'allow_once', sourceIndex = 0): Vote => ({
    sourceIndex,
    choiceId,
    userId,
    at: `2026-08-07T18:45:0${userId.length % 10}.000Z`,
  });

  it('one per person and stage: the same pick twice changes nothing, another pick replaces it', () => {
    const record = shellRecord(1);
    const once = voted(vote('U0ALICE'))(record)!;
    expect(once.votes?.map((v) => v.userId)).toEqual(['U0ALICE']);
    expect(voted(vote('U0ALICE'))(once)).toBeUndefined();
    const changed = voted(vote('U0ALICE', 'allow_local_prefix'))(once)!;
    expect(changed.votes?.map((v) => v.choiceId)).toEqual(['allow_local_prefix']);
  });

  it('a delegate pressing again for someone else replaces the vote: who it counts for is refreshed', () => {
    // Bob stands in for Alice and Carol (quorum 2): his vote was stored for Alice, Alice then voted
    // herself and came back. Counting Bob for Alice again would leave the quorum at 1 for ever.
    const forAlice = voted({ ...vote('U0BOB'), onBehalfOf: 'U0ALICE' })(shellRecord(1))!;
    const both = voted(vote('U0ALICE'))(forAlice)!;
    expect(principalsFor(both, 0, 'allow_once')).toEqual(new Set(['U0ALICE']));
    const forCarol = voted({ ...vote('U0BOB'), onBehalfOf: 'U0CAROL', at: 'a later press' })(both);
    expect(forCarol).toBeDefined();
    expect(principalsFor(forCarol!, 0, 'allow_once')).toEqual(new Set(['U0CAROL', 'U0ALICE']));
    expect(forCarol?.votes?.find((v) => v.userId === 'U0BOB')).toMatchObject({
      onBehalfOf: 'U0CAROL',
      at: 'a later press',
    });
    // Pressing once more for Carol changes nothing, nor does it record the press again.
    expect(voted({ ...vote('U0BOB'), onBehalfOf: 'U0CAROL' })(forCarol!)).toBeUndefined();
  });

  it('no vote on a stage that is not the current one, nor once someone is deciding', () => {
    expect(voted(vote('U0ALICE', 'allow_once', 1))(shellRecord(1))).toBeUndefined();
    expect(voted(vote('U0ALICE'))(inPhase(shellRecord(1), 'deciding'))).toBeUndefined();
    expect(voted(vote('U0ALICE', 'no_such_choice'))(shellRecord(1))).toBeUndefined();
  });

  it('a stage advance, a resolution or a supersede clears them', () => {
    const withVote: ApprovalRecord = { ...shellRecord(1), votes: [vote('U0ALICE')] };
    expect(withCurrentVotes(withVote)).toBe(withVote);
    const advanced = {
      ...withVote,
      currentRequirementId: { ...withVote.currentRequirementId, sourceIndex: 1 },
    };
    expect(withCurrentVotes(advanced).votes).toBeUndefined();
    expect(withCurrentVotes(inPhase(withVote, 'resolved')).votes).toBeUndefined();
    expect(withCurrentVotes({ ...withVote, phase: 'superseded' }).votes).toBeUndefined();
  });

  it('a vote answered "not recorded" is taken back, and only that one', () => {
    const a = vote('U0ALICE');
    const both = voted(vote('U0BOB'))(voted(a)(shellRecord(1))!)!;
    expect(unvoted(a)(both)?.votes?.map((v) => v.userId)).toEqual(['U0BOB']);
    expect(unvoted({ ...a, at: 'another click' })(both)).toBeUndefined();
  });
});

describe('the card of a request that needs care', () => {
  const risks: ApprovalRecord['risks'] = [
    { name: 'force-push', warning: 'Rewrites shared history', quorum: 2 },
    { name: '<!channel>', warning: '<!channel> *bold* <https://evil|click>' },
  ];

  it('names each rule with its warning, escaped, above the buttons', () => {
    const record = { ...shellRecord(1), risks };
    const lines = riskLines(record);
    expect(lines[0]).toBe(':warning: *Rewrites shared history* (risk rule `force-push`)');
    expect(lines[1]).not.toContain('<!channel>');
    expect(lines[1]).not.toContain('<https://');
    const card = renderCard(record, { now: NOW, quorum: 2 });
    const texts = card.blocks.map((b) => JSON.stringify(b));
    const warning = texts.findIndex((t) => t.includes('Rewrites shared history'));
    const buttons = card.blocks.findIndex((b) => (b as { type?: string }).type === 'actions');
    expect(warning).toBeGreaterThan(-1);
    expect(warning).toBeLessThan(buttons);
  });

  it('shows how far a quorum has come, per approving choice, and keeps the buttons', () => {
    const record: ApprovalRecord = {
      ...shellRecord(1),
      votes: [{ sourceIndex: 0, choiceId: 'allow_once', userId: 'U0ALICE', at: NOW.toISOString() }],
    };
    expect(quorumLines(record, 2)).toEqual(['*1 of 2 approvals* for Allow once: <@U0ALICE>']);
    expect(quorumLines(shellRecord(2), 3)).toEqual([
      '*Needs 3 approvals:* 3 different approvers must pick the same choice.',
    ]);
    expect(quorumLines(record, 1)).toEqual([]);
    const card = renderCard(record, { now: NOW, quorum: 2 });
    expect(JSON.stringify(card.blocks)).toContain('1 of 2 approvals');
    expect(card.blocks.some((b) => (b as { type?: string }).type === 'actions')).toBe(true);
  });

  it('a request a risk rule matched is never answered by a grant', () => {
    const record = shellRecord(2);
    expect(grantQuestion(record)).toBeDefined();
    expect(grantQuestion({ ...record, risks })).toBeUndefined();
  });
});
