import { describe, expect, it } from 'vitest';
import type { Grant } from '../../../src/domain/grants/grant.js';
import { SlackGrantLines } from '../../../src/slack/slackGrantLines.js';
import type { SlackNoticeSender } from '../../../src/slack/slackNotices.js';

// The line a revocation leaves in the grant's channel is a new message: every `<@U…>` in it would
// ping that person, so everyone it names, the owner of an owner's grant too, is named by name.

const NAMES: Record<string, string> = { U0BOB: 'bob', U0ALICE: 'alice', U0OWNER: 'olga' };

function linesTo(posted: string[]): SlackGrantLines {
  const sender = {
    nameOf: async (userId: string) => NAMES[userId],
    channelLine: async (_channel: string, text: string) => {
      posted.push(text);
    },
  } as unknown as SlackNoticeSender;
  return new SlackGrantLines(sender, { showHost: false });
}

const ownersGrant: Grant = {
  grantId: '0123456789-abcdef012345',
  caller: 'user:U0OWNER',
  tool: 'shell',
  capabilities: ['exec:make deploy'],
  sandboxMode: 'workspace-write',
  holder: 'bot',
  grantedBy: 'U0ALICE',
  approvalId: 'a-1',
  hostId: 'main',
  route: 'deploys',
  channel: 'C0DEPLOYS',
  createdAt: '2026-12-01T10:00:00.000Z',
  expiresAt: '2026-12-01T18:00:00.000Z',
  uses: 3,
};

describe('SlackGrantLines', () => {
  it("a revoked owner's grant names its owner, revoker and granter without pinging them", async () => {
    const posted: string[] = [];
    await linesTo(posted).grantRevoked(ownersGrant, 'U0BOB');
    expect(posted).toHaveLength(1);
    expect(posted[0]).toContain('revoked by bob');
    expect(posted[0]).toContain('for olga’s agents');
    expect(posted[0]).toContain('granted by alice');
    expect(posted[0]).not.toContain('<@');
  });
});
