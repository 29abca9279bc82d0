// GrantMaker on its own, with a stub store and keeper: what the presser is told follows
// whether the grant was stored, whatever showing it on the card comes to; a host-held grant is
// listed exactly when its card says it is.

import { describe, expect, it } from 'vitest';
import { renderCard } from '../../../../src/cards/renderCard.js';
import type { Grant, GrantStore } from '../../../../src/domain/grants/grant.js';
import type { ApprovalRecord } from '../../../../src/domain/record.js';
import { GrantMaker } from '../../../../src/relay/grants/grantMaker.js';
import type { RecordKeeper } from '../../../../src/relay/records/recordKeeper.js';
import { allText, DECIDED_AT, fileRecord, NOW } from '../../../support/cardFixtures.js';
import { deferredSampleRecord, ONE_USE_GRANTS } from '../../../support/grantInput.js';
import { captureLogger } from '../../../support/logCapture.js';

function maker(create: GrantStore['create'], mutateAndSync: RecordKeeper['mutateAndSync']) {
  const { logger, lines } = captureLogger();
  const grants = { create } as unknown as GrantStore;
  const keeper = { mutateAndSync } as unknown as RecordKeeper;
  const made = new GrantMaker({
    grants,
    keeper,
    record: async () => undefined,
    grantsOf: () => ONE_USE_GRANTS,
    logger,
  });
  return { made, lines };
}

const stored = async (input: Parameters<GrantStore['create']>[0]): Promise<Grant> => ({
  ...input,
  grantId: '0123456789-abcdef012345',
  uses: 0,
  createdAt: '2026-12-01T10:00:00.000Z',
});

/** The scopeToken of ONE_USE_GRANTS' one choice. */
const ONE_USE = 'u1';

describe('GrantMaker.remember', () => {
  it('resolves with the grant stored though the card could not show it: it answers requests', async () => {
    const { made, lines } = maker(stored, async () => {
      throw new Error('Redis gone');
    });
    const grant = await made.remember(deferredSampleRecord('a-1'), 'U0ALICE', 0, ONE_USE);
    expect(grant).toMatchObject({ grantId: '0123456789-abcdef012345', grantedBy: 'U0ALICE' });
    expect(lines.map((l) => l.msg)).toContain('grant stored; the card could not show it');
    expect(lines.map((l) => l.msg)).not.toContain('the grant asked for could not be stored');
  });

  it('resolves with nothing when the grant could not be stored', async () => {
    const { made, lines } = maker(
      async () => {
        throw new Error('Redis gone');
      },
      async () => undefined as never,
    );
    expect(await made.remember(deferredSampleRecord('a-1'), 'U0ALICE', 0, ONE_USE)).toBeUndefined();
    expect(lines.map((l) => l.msg)).toContain('the grant asked for could not be stored');
  });

  it("makes nothing of a scope the route does not offer, nor of none: never the route's ttl", async () => {
    const created: unknown[] = [];
    const { made, lines } = maker(
      async (input) => {
        created.push(input);
        return stored(input);
      },
      async () => undefined as never,
    );
    // The route offers one use only: an hour (its ttl) would answer any number of requests.
    expect(await made.remember(deferredSampleRecord('a-1'), 'U0ALICE', 0, 't3600000')).toBeUndefined();
    // A caller that names no scope (an asker of an earlier release, say) gets nothing either.
    const none = undefined as unknown as string;
    expect(await made.remember(deferredSampleRecord('a-1'), 'U0ALICE', 0, none)).toBeUndefined();
    expect(created).toEqual([]);
    expect(lines.map((l) => l.msg)).toEqual([
      'the scope asked for is no longer offered',
      'the scope asked for is no longer offered',
    ]);
  });
});

describe('GrantMaker.follow', () => {
  /** A fileAccess request resolved as Alice's `choiceId`, the host reporting a rule of `durability`. */
  const resolvedAs = (choiceId: string, durability: string): ApprovalRecord => ({
    ...fileRecord(),
    phase: 'resolved',
    resolution: {
      decision: 'approvedForSession',
      resolvedBy: 'user',
      decidedAt: DECIDED_AT,
      slackUserId: 'U0ALICE',
      choiceId,
      amendment: { durability, rulePreview: 'write /home/me/src/proj/Cargo.toml' },
    },
  });

  /** What follow() lists for `record`, and whether its card says the rule is listed. */
  const listing = async (record: ApprovalRecord) => {
    const listed: unknown[] = [];
    const grants = {
      create: async (input: Parameters<GrantStore['create']>[0]) => {
        listed.push(input);
        return stored(input);
      },
    } as unknown as GrantStore;
    const tracked: Promise<unknown>[] = [];
    const keeper = { track: (p: Promise<unknown>) => tracked.push(p) } as unknown as RecordKeeper;
    const { logger } = captureLogger();
    new GrantMaker({ grants, keeper, record: async () => record, grantsOf: () => undefined, logger }).follow(
      record,
    );
    await Promise.all(tracked);
    const says = allText(renderCard(record, { now: NOW })).includes('it is listed in `/countersign grants`');
    return { listed: listed.length, says };
  };

  it('lists the rule a session choice left for the session, and the card says so', async () => {
    expect(await listing(resolvedAs('allow_session', 'session'))).toEqual({ listed: 1, says: true });
  });

  it('lists no rule of another durability than the choice named, and the card says none is listed', async () => {
    // A record resolved so before resolved() compared the rule with the choice pressed.
    expect(await listing(resolvedAs('allow_session', 'localPersistent'))).toEqual({ listed: 0, says: false });
    // A once-scoped choice leaves no rule the host keeps as a grant.
    expect(await listing(resolvedAs('allow_once', 'session'))).toEqual({ listed: 0, says: false });
  });
});
