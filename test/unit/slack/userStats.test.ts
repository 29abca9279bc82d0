import { describe, expect, it } from 'vitest';
import { type DecisionFact, summarize } from '../../../src/domain/decisionStats.js';
import { statsFor, type UserStatsOptions } from '../../../src/slack/userStats.js';

const fact = (route: string): DecisionFact => ({
  route,
  tool: 'bash',
  by: 'person',
  waitedMs: 1,
  steps: 0,
  slaTracked: false,
  slaBreached: false,
});

/** Alice decides on deploys; Ada is an admin; `gone` is a route no longer in the file. */
function options(asked: number[] = []): UserStatsOptions {
  return {
    summary: async (windowMs) => {
      asked.push(windowMs);
      return {
        sinceMs: 0,
        untilMs: 1,
        read: 3,
        capped: false,
        routes: summarize(['deploys', 'ops', 'gone'].map(fact)),
      };
    },
    authorizer: {
      actsAsAdmin: async (userId) => userId === 'U0ADA',
      decidesOn: async (userId, route) => userId === 'U0ALICE' && route === 'deploys',
    },
    routeNames: () => ['deploys', 'ops'],
  };
}

describe('statsFor', () => {
  it('an approver sees their routes only; an admin every route, those gone from the file too', async () => {
    expect((await statsFor('U0ALICE', { window: '7d' }, options()))?.routes.map((r) => r.route)).toEqual([
      'deploys',
    ]);
    expect((await statsFor('U0ADA', { window: '7d' }, options()))?.routes.map((r) => r.route)).toEqual([
      'deploys',
      'gone',
      'ops',
    ]);
  });

  it('anyone else, or a route the user may not see, gets nothing, and the stream is not read', async () => {
    const asked: number[] = [];
    expect(await statsFor('U0BOB', { window: '7d' }, options(asked))).toBeUndefined();
    expect(await statsFor('U0ALICE', { window: '30d', route: 'ops' }, options(asked))).toBeUndefined();
    expect(asked).toEqual([]);
    const deploys = await statsFor('U0ALICE', { window: '30d', route: 'deploys' }, options(asked));
    expect(deploys?.routes.map((r) => r.route)).toEqual(['deploys']);
    expect(asked).toEqual([30 * 86_400_000]);
  });

  it('a route may be called `*`: its approvers see that route, not every route', async () => {
    const starred: UserStatsOptions = {
      ...options(),
      summary: async () => ({
        sinceMs: 0,
        untilMs: 1,
        read: 3,
        capped: false,
        routes: summarize(['*', 'deploys', 'prod-secrets'].map(fact)),
      }),
      authorizer: {
        actsAsAdmin: async () => false,
        decidesOn: async (userId, route) => userId === 'U0STAR' && route === '*',
      },
      routeNames: () => ['*', 'deploys', 'prod-secrets'],
    };
    expect((await statsFor('U0STAR', { window: '7d' }, starred))?.routes.map((r) => r.route)).toEqual(['*']);
    expect(await statsFor('U0STAR', { window: '7d', route: 'prod-secrets' }, starred)).toBeUndefined();
  });
});
