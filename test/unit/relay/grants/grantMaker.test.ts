// GrantMaker.remember on its own, with a stub store and keeper: what the presser is told follows
// whether the grant was stored, whatever showing it on the card comes to.

import { describe, expect, it } from 'vitest';
import type { Grant, GrantStore } from '../../../../src/domain/grants/grant.js';
import { GrantMaker } from '../../../../src/relay/grants/grantMaker.js';
import type { RecordKeeper } from '../../../../src/relay/records/recordKeeper.js';
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
