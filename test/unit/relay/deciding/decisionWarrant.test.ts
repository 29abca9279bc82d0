// What the Decider checks again on a record its caller did not check (a decision forwarded from
// another replica): a grant's and a timeout's warrant. Clicks and quorums are pinned against real
// Redis in test/integration/clickHandler.test.ts.

import { describe, expect, it } from 'vitest';
import type { Grant } from '../../../../src/domain/grants/grant.js';
import { questionDigest } from '../../../../src/domain/questionDigest.js';
import type { ApprovalRecord } from '../../../../src/domain/record.js';
import {
  type EscalationStep,
  OPEN_RULES,
  type RouteGrants,
  type RouteRules,
} from '../../../../src/domain/route.js';
import { DecisionWarrant } from '../../../../src/relay/deciding/decisionWarrant.js';
import { sampleRecord } from '../../../support/sampleRecord.js';
import { type TestAuthorizerOptions, testAuthorizer } from '../../../support/testAuthorizer.js';

const NOW = new Date('2026-11-30T12:00:00Z');
const GRANTS: RouteGrants = {
  enabled: true,
  ttlMs: 3_600_000,
  maxTtlMs: 86_400_000,
  caller: 'session',
  choices: [{ kind: 'time', ms: 3_600_000 }],
};

const record: ApprovalRecord = sampleRecord('w-1', {
  route: 'ops',
  availableChoices: [
    { choiceId: 'allow_once', label: 'Allow once', decision: 'approved', scope: 'once' },
    { choiceId: 'abort', label: 'Reject', decision: 'abort', scope: 'once', acceptsFeedback: true },
  ],
});

function liveGrant(overrides: Partial<Grant> = {}): Grant {
  return {
    grantId: 'g-1',
    caller: record.caller,
    tool: record.tool,
    capabilities: [...record.requiredCapabilities],
    sandboxMode: record.sandboxMode,
    holder: 'bot',
    grantedBy: 'U0ALICE',
    approvalId: 'w-0',
    hostId: 'default',
    route: 'ops',
    channel: 'C1',
    createdAt: '2026-11-30T11:00:00Z',
    expiresAt: '2026-11-30T13:00:00Z',
    uses: 0,
    ...overrides,
  };
}

function warrant(
  options: {
    grant?: Grant;
    ladder?: EscalationStep[];
    grants?: RouteGrants;
    rules?: RouteRules;
    /** What Slack says now of who may decide (people, groups, stand-ins, the host's owner). */
    slack?: TestAuthorizerOptions;
  } = {},
) {
  const { rules } = options;
  return new DecisionWarrant({
    authorizer: testAuthorizer({ ...(rules ? { rulesOf: () => rules } : {}), ...options.slack }),
    grants: { get: async (grantId) => (options.grant?.grantId === grantId ? options.grant : undefined) },
    grantsOf: () => options.grants ?? GRANTS,
    ladderOf: () => options.ladder ?? [],
    now: () => NOW,
  });
}

const byGrant = (grant: Grant) => ({
  sourceIndex: 0,
  choiceId: 'allow_once',
  by: { via: 'grant' as const, grant: { grantId: grant.grantId, grantedBy: grant.grantedBy } },
});
const UNWARRANTED_GRANT = { kind: 'unwarranted', via: 'grant' };

describe('DecisionWarrant', () => {
  it('lets a grant decide only what a live grant, as stored now, answers', async () => {
    const grant = liveGrant();
    expect(await warrant({ grant }).check(record, byGrant(grant))).toBeUndefined();
    // A grant by uses whose last use was taken for this very decision still answers it.
    const lastUse = liveGrant({ maxUses: 3, usesLeft: 0 });
    expect(await warrant({ grant: lastUse }).check(record, byGrant(lastUse))).toBeUndefined();

    for (const stored of [
      undefined,
      liveGrant({ revokedAt: '2026-11-30T11:30:00Z' }),
      liveGrant({ expiresAt: '2026-11-30T11:59:59Z' }),
      liveGrant({ capabilities: ['file-write:/srv/other.ts'] }),
      liveGrant({ caller: 'session:another' }),
      liveGrant({ holder: 'host' }),
    ]) {
      expect(await warrant(stored ? { grant: stored } : {}).check(record, byGrant(grant))).toEqual(
        UNWARRANTED_GRANT,
      );
    }
    // Named by someone else than its granter, for another choice or stage, or where grants are off.
    const named = byGrant(grant);
    expect(
      await warrant({ grant }).check(record, {
        ...named,
        by: { via: 'grant', grant: { grantId: 'g-1', grantedBy: 'U0EVE' } },
      }),
    ).toEqual(UNWARRANTED_GRANT);
    expect(await warrant({ grant }).check(record, { ...named, choiceId: 'abort' })).toEqual(
      UNWARRANTED_GRANT,
    );
    expect(await warrant({ grant }).check(record, { ...named, sourceIndex: 1 })).toEqual(UNWARRANTED_GRANT);
    expect(await warrant({ grant, grants: { ...GRANTS, enabled: false } }).check(record, named)).toEqual(
      UNWARRANTED_GRANT,
    );
  });

  it('lets a timeout decide only on a route whose ladder ends in one, with the choice a timeout takes', async () => {
    const timeout = { sourceIndex: 0, choiceId: 'abort', by: { via: 'timeout' as const } };
    const ladder: EscalationStep[] = [
      { afterMs: 60_000, action: 'remind' },
      { afterMs: 600_000, action: 'timeout' },
    ];
    expect(await warrant({ ladder }).check(record, timeout)).toBeUndefined();
    const refused = { kind: 'unwarranted', via: 'timeout' };
    expect(await warrant({ ladder: ladder.slice(0, 1) }).check(record, timeout)).toEqual(refused);
    expect(await warrant().check(record, timeout)).toEqual(refused);
    // A timeout never approves.
    expect(await warrant({ ladder }).check(record, { ...timeout, choiceId: 'allow_once' })).toEqual(refused);
  });
});

describe('DecisionWarrant: a grant whose granter may no longer decide', () => {
  // A grant decides in its granter's name: it answers only while they may decide the request
  // now, as a click of theirs would be checked (docs/security.md).
  const grant = liveGrant();
  const approvers = (...users: string[]): RouteRules => ({
    ...OPEN_RULES,
    approvers: { users, usergroups: [] },
  });
  const inGroup = (group: string): RouteRules => ({
    ...OPEN_RULES,
    approvers: { users: [], usergroups: [group] },
  });

  it('answers while the granter may decide the request now', async () => {
    expect(
      await warrant({ grant, rules: approvers('U0ALICE') }).check(record, byGrant(grant)),
    ).toBeUndefined();
    expect(
      await warrant({ grant, rules: inGroup('S0OPS'), slack: { groups: { S0OPS: ['U0ALICE'] } } }).check(
        record,
        byGrant(grant),
      ),
    ).toBeUndefined();
  });

  it('answers nothing once the granter is deactivated, a guest, of another team, or not confirmed by Slack', async () => {
    for (const person of [
      { teamId: 'T1', guest: false, deactivated: true },
      { teamId: 'T1', guest: true },
      { teamId: 'T0OTHER', guest: false },
    ]) {
      const refusing = warrant({
        grant,
        rules: approvers('U0ALICE'),
        slack: { people: { U0ALICE: person } },
      });
      expect(await refusing.check(record, byGrant(grant))).toEqual(UNWARRANTED_GRANT);
    }
    const unknown = warrant({
      grant,
      slack: {
        people: async () => {
          throw new Error('users.info failed');
        },
      },
    });
    expect(await unknown.check(record, byGrant(grant))).toEqual(UNWARRANTED_GRANT);
  });

  it('answers nothing once the granter is no longer among those who decide the route', async () => {
    // Taken off the approvers, out of their user group, or out of the channel of a route without approvers.
    expect(await warrant({ grant, rules: approvers('U0BOB') }).check(record, byGrant(grant))).toEqual(
      UNWARRANTED_GRANT,
    );
    expect(
      await warrant({ grant, rules: inGroup('S0OPS'), slack: { groups: { S0OPS: ['U0BOB'] } } }).check(
        record,
        byGrant(grant),
      ),
    ).toEqual(UNWARRANTED_GRANT);
    expect(
      await warrant({ grant, slack: { channels: { C1: ['U0BOB'] } } }).check(record, byGrant(grant)),
    ).toEqual(UNWARRANTED_GRANT);
    // The host's owner, on a route that does not let them approve their own agent's requests.
    expect(
      await warrant({
        grant,
        rules: { ...approvers('U0ALICE'), allowSelfApproval: false },
        slack: { ownerOf: () => 'U0ALICE' },
      }).check(record, byGrant(grant)),
    ).toEqual(UNWARRANTED_GRANT);
  });

  it('answers nothing on a standing the granter has only as a delegate', async () => {
    // Bob is away and named Alice: she may decide this once for him, not let a grant decide for her.
    const standing = warrant({
      grant,
      rules: approvers('U0BOB'),
      slack: {
        standIns: {
          U0ALICE: [
            { userId: 'U0BOB', until: '2026-12-01T12:00:00Z', delegate: 'U0ALICE', since: NOW.toISOString() },
          ],
        },
      },
    });
    expect(await standing.check(record, byGrant(grant))).toEqual(UNWARRANTED_GRANT);
    // Her click is hers to make all the same.
    expect(
      await standing.check(record, {
        sourceIndex: 0,
        choiceId: 'allow_once',
        by: { via: 'click', userId: 'U0ALICE' },
      }),
    ).toMatchObject({ kind: 'recounted' });
  });
});

describe('DecisionWarrant: a typed confirmation', () => {
  // A forwarded approval is claimed by another replica: the text typed travels with it and is
  // checked there against the record it holds.
  const confirmed: ApprovalRecord = {
    ...record,
    risks: [{ name: 'secrets', warning: 'Touches secrets', confirm: 'type' }],
  };
  const byClick = (choiceId: string, typed?: string) => ({
    sourceIndex: 0,
    choiceId,
    by: { via: 'click' as const, userId: 'U0ALICE', ...(typed === undefined ? {} : { typed }) },
  });

  it('lets an approving click through only with the target typed', async () => {
    expect(await warrant().check(confirmed, byClick('allow_once', 'app.ts'))).toBeUndefined();
    for (const typed of [undefined, '', '/srv/app.ts', 'App.ts']) {
      expect(await warrant().check(confirmed, byClick('allow_once', typed))).toMatchObject({
        kind: 'unconfirmed',
        confirmation: { target: { text: 'app.ts', source: 'file' } },
      });
    }
  });

  it('holds a click that names the question it saw to the question asked now', async () => {
    const seen = questionDigest(confirmed);
    const asked = {
      ...byClick('allow_once', 'app.ts'),
      by: { ...byClick('allow_once', 'app.ts').by, askedAs: seen },
    };
    expect(await warrant().check(confirmed, asked)).toBeUndefined();
    const reasked: ApprovalRecord = {
      ...confirmed,
      subject: { ...confirmed.subject, path: '/srv/lib/app.ts' },
    };
    expect(await warrant().check(reasked, asked)).toEqual({ kind: 'askedOtherwise' });
    // Rejecting what was seen is held to it too: the person rejected one question, not another.
    const rejected = { ...byClick('abort'), by: { ...byClick('abort').by, askedAs: seen } };
    expect(await warrant().check(reasked, rejected)).toEqual({ kind: 'askedOtherwise' });
  });

  it('asks nothing of a rejection, nor of a record no such rule matched', async () => {
    expect(await warrant().check(confirmed, byClick('abort'))).toBeUndefined();
    expect(await warrant().check(record, byClick('allow_once'))).toBeUndefined();
  });

  it('never counts the owner toward a quorum, even through a delegate standing in for them', async () => {
    const quorumWarrant = new DecisionWarrant({
      authorizer: testAuthorizer({
        rulesOf: () => ({
          ...OPEN_RULES,
          approvers: { users: ['U0ALICE', 'U0BOB', 'U0DAVE'], usergroups: [] },
          quorum: 2,
        }),
        ownerOf: () => 'U0ALICE',
        standIns: {
          U0CAROL: [
            {
              userId: 'U0ALICE',
              until: '2026-12-01T12:00:00Z',
              delegate: 'U0CAROL',
              since: NOW.toISOString(),
            },
          ],
        },
      }),
      grants: { get: async () => undefined },
      grantsOf: () => GRANTS,
      ladderOf: () => [],
      now: () => NOW,
    });
    const at = NOW.toISOString();
    const voted: ApprovalRecord = {
      ...record,
      votes: [
        { sourceIndex: 0, choiceId: 'allow_once', userId: 'U0CAROL', onBehalfOf: 'U0ALICE', at },
        { sourceIndex: 0, choiceId: 'allow_once', userId: 'U0BOB', at },
      ],
    };
    const ask = {
      sourceIndex: 0,
      choiceId: 'allow_once',
      by: { via: 'click' as const, userId: 'U0BOB', voters: ['U0CAROL', 'U0BOB'] },
    };
    expect(await quorumWarrant.check(voted, ask)).toEqual({ kind: 'quorumNotMet', votes: 1, quorum: 2 });
  });
});

describe('DecisionWarrant: a deactivated account', () => {
  it('neither decides nor counts toward a quorum with a vote it cast before', async () => {
    const quorumWarrant = new DecisionWarrant({
      authorizer: testAuthorizer({
        rulesOf: () => ({
          ...OPEN_RULES,
          approvers: { users: ['U0ALICE', 'U0BOB'], usergroups: [] },
          quorum: 2,
        }),
        people: {
          U0ALICE: { teamId: 'T1', guest: false, deactivated: true },
          U0BOB: { teamId: 'T1', guest: false },
        },
      }),
      grants: { get: async () => undefined },
      grantsOf: () => GRANTS,
      ladderOf: () => [],
      now: () => NOW,
    });
    const at = NOW.toISOString();
    const asked = questionDigest(record);
    const voted: ApprovalRecord = {
      ...record,
      votes: [
        { sourceIndex: 0, choiceId: 'allow_once', userId: 'U0ALICE', asked, at },
        { sourceIndex: 0, choiceId: 'allow_once', userId: 'U0BOB', asked, at },
      ],
    };
    const byBob = {
      sourceIndex: 0,
      choiceId: 'allow_once',
      by: { via: 'click' as const, userId: 'U0BOB', voters: ['U0ALICE', 'U0BOB'] },
    };
    expect(await quorumWarrant.check(voted, byBob)).toEqual({ kind: 'quorumNotMet', votes: 1, quorum: 2 });
    const byAlice = { ...byBob, by: { ...byBob.by, userId: 'U0ALICE' } };
    expect(await quorumWarrant.check(voted, byAlice)).toMatchObject({
      kind: 'notAuthorized',
      refused: { why: 'deactivated' },
    });
  });
});

describe('DecisionWarrant: a reason the route requires', () => {
  // Checked where the click was taken (ClickHandler) and again where it is claimed: the route may
  // have changed since (a configuration reloaded), or the replica that took it be of an earlier
  // release that did not check it.
  const required: RouteRules = { ...OPEN_RULES, rejectReason: 'required', quickReasons: ['Use a PR'] };
  const rejecting = (feedback?: string) => ({
    sourceIndex: 0,
    choiceId: 'abort',
    ...(feedback === undefined ? {} : { feedback }),
    by: { via: 'click' as const, userId: 'U0ALICE' },
  });

  it("refuses a person's rejection sent without one, in the words the replica that took it uses", async () => {
    for (const feedback of [undefined, '', '  ']) {
      expect(await warrant({ rules: required }).check(record, rejecting(feedback))).toEqual({
        kind: 'reasonMissing',
        route: 'ops',
        quickReasons: true,
      });
    }
    expect(await warrant({ rules: required }).check(record, rejecting('Use a PR'))).toBeUndefined();
    // A choice that takes no reason, or a route that does not require one, asks for none.
    expect(
      await warrant({ rules: required }).check(record, { ...rejecting(), choiceId: 'allow_once' }),
    ).toBeUndefined();
    expect(await warrant().check(record, rejecting())).toBeUndefined();
  });

  it('asks no reason of a timeout or a grant, which no person gives', async () => {
    const ladder: EscalationStep[] = [{ afterMs: 600_000, action: 'timeout' }];
    const timeout = { sourceIndex: 0, choiceId: 'abort', by: { via: 'timeout' as const } };
    expect(await warrant({ rules: required, ladder }).check(record, timeout)).toBeUndefined();
    const grant = liveGrant();
    expect(await warrant({ rules: required, grant }).check(record, byGrant(grant))).toBeUndefined();
  });
});
