// The ID of a route channel given as #name: found among the channels the bot is in
// (users.conversations, a stub of the Web API here), told by a post, and refused when unknown.

import type { WebClient } from '@slack/web-api';
import { describe, expect, it } from 'vitest';
import { SlackChannelIds } from '../../../src/slack/channelIds.js';

function slackWith(channels: Array<{ id: string; name: string }>, pageSize = 1) {
  const asked: Array<Record<string, unknown>> = [];
  const web = {
    users: {
      conversations: async (args: Record<string, unknown>) => {
        asked.push(args);
        const start = Number(args.cursor ?? 0);
        const next = start + pageSize < channels.length ? String(start + pageSize) : '';
        return {
          ok: true,
          channels: channels.slice(start, start + pageSize),
          response_metadata: { next_cursor: next },
        };
      },
    },
  } as unknown as Pick<WebClient, 'users'>;
  return { web, asked };
}

describe('SlackChannelIds', () => {
  it('gives an ID as it is, and a #name the ID of the bot’s channel of that name, every page read once', async () => {
    let now = 0;
    const { web, asked } = slackWith([
      { id: 'C1', name: 'general' },
      { id: 'G2', name: 'approvals' },
    ]);
    const ids = new SlackChannelIds(web, { ttlMs: 60_000, now: () => now });
    expect(await ids.id('C0DIRECT')).toBe('C0DIRECT');
    expect(asked).toEqual([]);
    // Asked together, listed once (two pages); a name in the config may be in capitals.
    expect(await Promise.all([ids.id('#approvals'), ids.id('#Approvals'), ids.id('#general')])).toEqual([
      'G2',
      'G2',
      'C1',
    ]);
    expect(asked).toHaveLength(2);
    expect(asked[0]).toMatchObject({ types: 'public_channel,private_channel', exclude_archived: true });
    // Trusted for ttlMs, then listed again.
    now = 59_999;
    await ids.id('#approvals');
    expect(asked).toHaveLength(2);
    now = 60_000;
    await ids.id('#approvals');
    expect(asked).toHaveLength(4);
  });

  it('refuses a name the bot is in no channel of, saying why, and does not list again for it at once', async () => {
    let now = 0;
    const { web, asked } = slackWith([{ id: 'C1', name: 'general' }]);
    const ids = new SlackChannelIds(web, { ttlMs: 60_000, now: () => now });
    await expect(ids.id('#approvals')).rejects.toThrow(
      /#approvals is not among the channels the bot is a member of/,
    );
    await expect(ids.id('#approvals')).rejects.toThrow(/invite the bot/);
    expect(asked).toHaveLength(1);
    now = 30_000;
    await expect(ids.id('#approvals')).rejects.toThrow();
    expect(asked).toHaveLength(2);
  });

  it('takes what a post answered, freshest, without asking', async () => {
    const { web, asked } = slackWith([{ id: 'C1', name: 'approvals' }]);
    const ids = new SlackChannelIds(web, { ttlMs: 60_000 });
    ids.learn('#approvals', 'C9');
    expect(await ids.id('#approvals')).toBe('C9');
    expect(asked).toEqual([]);
  });

  it('rejects when Slack cannot say', async () => {
    const web = {
      users: { conversations: async () => Promise.reject(new Error('An API error occurred: missing_scope')) },
    } as unknown as Pick<WebClient, 'users'>;
    await expect(new SlackChannelIds(web, { ttlMs: 60_000 }).id('#approvals')).rejects.toThrow(
      /missing_scope/,
    );
  });
});
