// Card links: built from the workspace address once auth.test has given it, as Slack builds a
// permalink; asked of Slack (chat.getPermalink, once per card) until then or when it cannot be.

import { describe, expect, it } from 'vitest';
import { Permalinks } from '../../../src/slack/permalinks.js';
import { captureLogger } from '../../support/logCapture.js';

function web(answers: Array<{ permalink?: string } | Error>) {
  const asked: Array<{ channel: string; message_ts: string }> = [];
  const client = {
    chat: {
      getPermalink: async (args: { channel: string; message_ts: string }) => {
        asked.push(args);
        const answer = answers.shift() ?? {};
        if (answer instanceof Error) throw answer;
        return { ok: true, ...answer };
      },
    },
  };
  return { client: client as never, asked };
}

describe('Permalinks', () => {
  it('builds the link from the workspace address, with no call', async () => {
    const { client, asked } = web([]);
    const { logger } = captureLogger('warn');
    const links = new Permalinks(client, logger, () => 'https://acme.slack.com/');
    expect(await links.of('C0APPROVALS', '1712345678.000100')).toBe(
      'https://acme.slack.com/archives/C0APPROVALS/p1712345678000100',
    );
    const bare = new Permalinks(client, logger, () => 'https://acme.enterprise.slack.com');
    expect(await bare.of('C0A', '1.2')).toBe('https://acme.enterprise.slack.com/archives/C0A/p12');
    expect(asked).toEqual([]);
  });

  it('asks Slack, once per card, before the address is known, for one not https, or a ts not a ts', async () => {
    const { client, asked } = web([
      { permalink: 'https://x/1' },
      { permalink: 'https://x/2' },
      { permalink: 'https://x/3' },
    ]);
    const { logger } = captureLogger('warn');
    let address: string | undefined;
    const links = new Permalinks(client, logger, () => address);
    expect(await links.of('C0A', '1.1')).toBe('https://x/1');
    expect(await links.of('C0A', '1.1')).toBe('https://x/1');
    address = 'http://plain.example/';
    expect(await links.of('C0A', '1.2')).toBe('https://x/2');
    address = 'https://acme.slack.com/';
    expect(await links.of('C0A', 'not-a-ts')).toBe('https://x/3');
    expect(asked.map((a) => a.message_ts)).toEqual(['1.1', '1.2', 'not-a-ts']);
  });

  it('a card Slack gives no link for, or a refusal, is shown unlinked', async () => {
    const { client } = web([{}, new Error('channel_not_found')]);
    const { logger, lines } = captureLogger('warn');
    const links = new Permalinks(client, logger);
    expect(await links.of('C0A', '1.1')).toBeUndefined();
    expect(await links.of('C0A', '1.2')).toBeUndefined();
    expect(lines.some((r) => String(r.msg).includes('could not get the link'))).toBe(true);
  });
});
