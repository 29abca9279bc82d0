// The ID of a route channel given as #name: found among the channels the bot is in
// (users.conversations, a stub of the Web API here), told by a post, and refused when unknown.
// Once found, a name keeps its ID for the process's life: another channel that takes the name
// later gets nothing of the route's (its cards, grants, or who may decide).

import type { WebClient } from '@slack/web-api';
import { describe, expect, it } from 'vitest';
import { SlackChannelIds } from '../../../src/slack/channelIds.js';
import { captureLogger } from '../../support/logCapture.js';

function slackWith(channels: Array<{ id: string; name: string }>, pageSize = 1) {
  const asked: Array<Record<string, unknown>> = [];
  // What the workspace is at the time of each listing: a test renames, archives or leaves in it.
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

  it('keeps the ID a #name was found as when another channel takes the name, and says so once', async () => {
    let now = 0;
    const channels = [{ id: 'C1', name: 'approvals' }];
    const { web } = slackWith(channels, 10);
    const { logger, lines } = captureLogger();
    const ids = new SlackChannelIds(web, { ttlMs: 60_000, now: () => now, logger });
    expect(await ids.id('#approvals')).toBe('C1');
    // Renamed, and a channel of someone else's (the bot was invited there) takes the old name.
    channels.splice(0, 1, { id: 'C1', name: 'approvals-old' }, { id: 'C2', name: 'approvals' });
    now = 60_000;
    expect(await ids.id('#approvals')).toBe('C1');
    expect(ids.idNow('#approvals')).toBe('C1');
    // A post's answer naming the other channel moves nothing either.
    ids.learn('#approvals', 'C2');
    now = 120_000;
    expect(await ids.id('#Approvals')).toBe('C1');
    const taken = lines.filter((l) => String(l.msg).includes('now names another channel'));
    expect(taken).toHaveLength(1);
    expect(taken[0]).toMatchObject({ level: 40, channel: '#approvals', id: 'C1', nowNames: 'C2' });
    expect(taken[0]!.msg).toMatch(/name the channel by its ID/);
  });

  it('keeps the ID of a channel renamed, without a word', async () => {
    let now = 0;
    const channels = [{ id: 'C1', name: 'approvals' }];
    const { web } = slackWith(channels);
    const { logger, lines } = captureLogger();
    const ids = new SlackChannelIds(web, { ttlMs: 60_000, now: () => now, logger });
    expect(await ids.id('#approvals')).toBe('C1');
    channels.splice(0, 1, { id: 'C1', name: 'approvals-2024' });
    now = 60_000;
    expect(await ids.id('#approvals')).toBe('C1');
    expect(lines.filter((l) => Number(l.level) >= 40)).toEqual([]);
  });

  it('refuses a #name whose channel the bot is no longer in, not following the name elsewhere', async () => {
    let now = 0;
    const channels = [{ id: 'C1', name: 'approvals' }];
    const { web, asked } = slackWith(channels);
    const ids = new SlackChannelIds(web, { ttlMs: 60_000, now: () => now });
    expect(await ids.id('#approvals')).toBe('C1');
    // Archived (or the bot removed), and another channel named as it was.
    channels.splice(0, 1, { id: 'C2', name: 'approvals' });
    now = 60_000;
    await expect(ids.id('#approvals')).rejects.toThrow(
      /#approvals \(C1\) is no longer among the channels the bot is a member of/,
    );
    // Not listed again at once for it, and still not C2 once listed again.
    const listings = asked.length;
    await expect(ids.id('#approvals')).rejects.toThrow(/C1/);
    expect(asked).toHaveLength(listings);
    now = 90_000;
    await expect(ids.id('#approvals')).rejects.toThrow(/C1/);
    expect(asked.length).toBeGreaterThan(listings);
    // The posts' ID is kept: Slack refuses a post there, none goes to the name's new channel.
    expect(ids.idNow('#approvals')).toBe('C1');
    // Back in it (unarchived, invited again): the same ID serves again.
    channels.push({ id: 'C1', name: 'approvals-old' });
    now = 120_000;
    expect(await ids.id('#approvals')).toBe('C1');
  });

  it('keeps the ID a post told first, whatever a listing says later', async () => {
    let now = 0;
    const { web } = slackWith([
      { id: 'C2', name: 'approvals' },
      { id: 'C9', name: 'approvals-old' },
    ]);
    const ids = new SlackChannelIds(web, { ttlMs: 60_000, now: () => now });
    ids.learn('#approvals', 'C9');
    now = 60_000;
    expect(await ids.id('#approvals')).toBe('C9');
  });
});
