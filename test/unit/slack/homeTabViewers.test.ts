import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Refused } from '../../../src/domain/authorization.js';
import type { ApprovalRecord } from '../../../src/domain/record.js';
import { HomeTab, type HomeTabOptions } from '../../../src/slack/homeTab.js';

// Whose Home is published again when approvals change: those who opened it lately, except a
// stranger no route lets in, whose Home (why they have no access) no approval changes. Each of
// those would cost a views.publish at every change, on as many users as strangers choose to be.
// On a fake clock; views.publish is a stub of the Web API, the viewers a set in memory.

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const GUEST: Refused = { allowed: false, why: 'guest', route: '(none)' };
const UNCONFIRMED: Refused = { allowed: false, why: 'unverified', route: '(none)', what: 'user' };
/** Any change of an approval: the viewers' Homes follow it. */
const CHANGE = { approvalId: 'a1', phase: 'pending' } as ApprovalRecord;

/** A Home whose strangers are `strangers` (userId → why, no route letting them in). */
function homeWith(strangers: Map<string, Refused>) {
  const published: string[] = [];
  const viewers = new Set<string>();
  const options = {
    views: {
      publish: async (userId: string) => {
        published.push(userId);
      },
    },
    waiting: { for: async () => [] },
    recent: { list: async () => [], add: async () => {} },
    mayRecall: async () => true,
    viewers: {
      opened: async (userId: string) => {
        viewers.add(userId);
      },
      left: async (userId: string) => {
        viewers.delete(userId);
      },
      current: async () => [...viewers],
    },
    permalinks: { of: async () => undefined },
    stranger: async (userId: string) => {
      const refused = strangers.get(userId);
      return refused ? { refused, letIn: [] } : undefined;
    },
    channel: 'C0APPROVALS',
    status: () => ({ host: true, redis: true }),
    logger: pino({ level: 'silent' }),
  } as unknown as HomeTabOptions;
  const home = new HomeTab(options);
  /** Approvals change, and every Home that follows them has been published again. */
  const changed = async () => {
    published.length = 0;
    home.follow(CHANGE);
    await vi.advanceTimersByTimeAsync(60_000);
    return [...published].sort();
  };
  return { home, published, viewers, changed };
}

describe('HomeTab viewers', () => {
  it('a guest no route lets in is shown why, and not published again when approvals change', async () => {
    const { home, published, viewers, changed } = homeWith(new Map([['U0GUEST', GUEST]]));
    await home.opened('U0GUEST');
    await home.opened('U0ALICE');
    await vi.advanceTimersByTimeAsync(60_000);
    expect([...published].sort()).toEqual(['U0ALICE', 'U0GUEST']);
    expect([...viewers]).toEqual(['U0ALICE']);
    expect(await changed()).toEqual(['U0ALICE']);
    home.stop();
  });

  it('a viewer who became a stranger is dropped once their refusal is published', async () => {
    const strangers = new Map<string, Refused>();
    const { home, viewers, changed } = homeWith(strangers);
    await home.opened('U0DAVE');
    await home.opened('U0ALICE');
    await vi.advanceTimersByTimeAsync(60_000);
    // Dave became a guest: the next change shows him his refusal, and the one after nothing more.
    strangers.set('U0DAVE', GUEST);
    expect(await changed()).toEqual(['U0ALICE', 'U0DAVE']);
    expect([...viewers]).toEqual(['U0ALICE']);
    expect(await changed()).toEqual(['U0ALICE']);
    home.stop();
  });

  it('one Slack could not confirm stays a viewer: their Home is right again once Slack answers', async () => {
    const strangers = new Map([['U0EVE', UNCONFIRMED]]);
    const { home, viewers, changed } = homeWith(strangers);
    await home.opened('U0EVE');
    await vi.advanceTimersByTimeAsync(60_000);
    expect([...viewers]).toEqual(['U0EVE']);
    strangers.delete('U0EVE');
    expect(await changed()).toEqual(['U0EVE']);
    home.stop();
  });
});
