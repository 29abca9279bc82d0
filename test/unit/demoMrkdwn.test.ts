// The demo page's mrkdwn parser and date tokens (demo/public/*.js, plain browser modules).

import { describe, expect, test } from 'vitest';

interface Node {
  type: string;
  text?: string;
  children?: Node[];
  [key: string]: unknown;
}

// Loaded by a computed name: they are browser scripts without type declarations.
const MRKDWN = '../../demo/public/mrkdwn.js';
const DATES = '../../demo/public/dates.js';
const { parseMrkdwn, isSafeUrl } = (await import(MRKDWN)) as {
  parseMrkdwn: (text: string) => Node[];
  isSafeUrl: (url: string) => boolean;
};
const { formatSlackDate } = (await import(DATES)) as {
  formatSlackDate: (seconds: number, format: string, fallback: string, now?: Date) => string;
};

describe('parseMrkdwn', () => {
  test('bold, italic, strike, inline code and code blocks, as a card writes them', () => {
    expect(parseMrkdwn('*Tool:* `write_file` _(not given)_ ~old~')).toEqual([
      { type: 'bold', children: [{ type: 'text', text: 'Tool:' }] },
      { type: 'text', text: ' ' },
      { type: 'code', text: 'write_file' },
      { type: 'text', text: ' ' },
      { type: 'italic', children: [{ type: 'text', text: '(not given)' }] },
      { type: 'text', text: ' ' },
      { type: 'strike', children: [{ type: 'text', text: 'old' }] },
    ]);
    expect(parseMrkdwn('*Arguments*\n```\n{"a": "*not bold*"}\n```')).toEqual([
      { type: 'bold', children: [{ type: 'text', text: 'Arguments' }] },
      { type: 'text', text: '\n' },
      { type: 'pre', text: '{"a": "*not bold*"}' },
    ]);
  });

  test('markers inside a word are not emphasis', () => {
    expect(parseMrkdwn('a*b*c snake_case_name')).toEqual([{ type: 'text', text: 'a*b*c snake_case_name' }]);
  });

  test('mentions, links and dates the bot wrote become tokens', () => {
    expect(parseMrkdwn('<@U0ALICE> <#C0APPROVALS> <!subteam^S1|@oncall> <!here>')).toEqual([
      { type: 'user', id: 'U0ALICE', label: '' },
      { type: 'text', text: ' ' },
      { type: 'channel', id: 'C0APPROVALS', label: '' },
      { type: 'text', text: ' ' },
      { type: 'usergroup', id: 'S1', label: '@oncall' },
      { type: 'text', text: ' ' },
      { type: 'broadcast', name: 'here' },
    ]);
    expect(parseMrkdwn('<https://example.com/a?b=1&amp;c=2|the docs>')).toEqual([
      { type: 'link', url: 'https://example.com/a?b=1&c=2', label: 'the docs' },
    ]);
    expect(parseMrkdwn('<!date^1700000000^{date_num} {time}|2023-11-14 22:13 UTC>')).toEqual([
      { type: 'date', seconds: 1700000000, format: '{date_num} {time}', fallback: '2023-11-14 22:13 UTC' },
    ]);
  });

  test('escaped agent text stays text: no mention, no link, no markup', () => {
    const nodes = parseMrkdwn(
      'Ping &lt;!channel&gt; &lt;https://evil.example|https://bank.example&gt; &lt;img src=x onerror=alert(1)&gt; &amp;lt;',
    );
    expect(nodes).toEqual([
      {
        type: 'text',
        text: 'Ping <!channel> <https://evil.example|https://bank.example> <img src=x onerror=alert(1)> &lt;',
      },
    ]);
  });

  test('emoji codes become emoji nodes', () => {
    expect(parseMrkdwn(':white_check_mark: *Decision:* Allowed')).toEqual([
      { type: 'emoji', name: 'white_check_mark' },
      { type: 'text', text: ' ' },
      { type: 'bold', children: [{ type: 'text', text: 'Decision:' }] },
      { type: 'text', text: ' Allowed' },
    ]);
  });

  test('only http(s) and mailto links may be followed', () => {
    expect(isSafeUrl('https://example.com')).toBe(true);
    expect(isSafeUrl('mailto:ops@example.com')).toBe(true);
    expect(isSafeUrl('javascript:alert(1)')).toBe(false);
    expect(isSafeUrl('data:text/html,<script>')).toBe(false);
  });
});

describe('formatSlackDate', () => {
  const now = new Date(2026, 11, 1, 12, 0, 0);
  const seconds = (d: Date) => Math.floor(d.getTime() / 1000);

  test('fills the tokens Slack knows, in the local time zone', () => {
    const at = new Date(2026, 11, 1, 9, 5, 0);
    expect(formatSlackDate(seconds(at), '{date_num}', 'fb', now)).toBe('2026-12-01');
    expect(formatSlackDate(seconds(at), '{date_short_pretty} {time}', 'fb', now)).toBe('Today 9:05 AM');
    expect(formatSlackDate(seconds(at), '{ago}', 'fb', now)).toBe('2 hours ago');
    expect(formatSlackDate(seconds(new Date(2026, 10, 30, 9)), '{date_pretty}', 'fb', now)).toBe('Yesterday');
    expect(formatSlackDate(seconds(new Date(2026, 9, 2, 9)), '{date}', 'fb', now)).toBe('October 2nd, 2026');
  });

  test('a format with an unknown token falls back to the text after the bar', () => {
    expect(formatSlackDate(seconds(now), '{date_num} {weekday}', '2026-12-01 12:00 UTC', now)).toBe(
      '2026-12-01 12:00 UTC',
    );
  });
});
