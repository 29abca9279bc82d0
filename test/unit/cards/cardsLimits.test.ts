import { describe, expect, it } from 'vitest';
import { describeDecision } from '../../../src/cards/describeDecision.js';
import { clip, codeBlock, escapeMrkdwn, inlineCode, quote, truncate } from '../../../src/cards/escape.js';
import {
  FEEDBACK_BLOCK_ID,
  FEEDBACK_INPUT_ACTION_ID,
  FEEDBACK_VIEW_CALLBACK_ID,
} from '../../../src/cards/ids.js';
import { checkMessageLimits, checkViewLimits, countBlockText } from '../../../src/cards/limits.js';
import { readFeedback, renderFeedbackModal } from '../../../src/cards/renderFeedbackModal.js';
import { decisionTone } from '../../../src/domain/decisionWords.js';

const section = (text: string) => ({ type: 'section', text: { type: 'mrkdwn', text } });
let nextActionId = 0;
const button = (text: string, extra: Record<string, unknown> = {}) => ({
  type: 'button',
  action_id: `a_${nextActionId++}`,
  text: { type: 'plain_text', text },
  value: 'v',
  ...extra,
});
const message = (blocks: unknown[]) => ({ text: 'fallback', blocks });

describe('checkMessageLimits', () => {
  it('accepts a well-formed message', () => {
    expect(
      checkMessageLimits(
        message([
          { type: 'header', text: { type: 'plain_text', text: 'Approval needed' } },
          section('hello'),
          { type: 'context', elements: [{ type: 'mrkdwn', text: 'x' }] },
          { type: 'divider' },
          { type: 'actions', block_id: 'b1', elements: [button('Allow once', { style: 'primary' })] },
        ]),
      ),
    ).toEqual([]);
    expect(checkMessageLimits({ text: 'just text' })).toEqual([]);
  });

  it('catches 51 blocks', () => {
    const v = checkMessageLimits(message(Array.from({ length: 51 }, () => ({ type: 'divider' }))));
    expect(v).toEqual(['blocks: 51 blocks > 50']);
  });

  it('catches a 3,001-character section', () => {
    const v = checkMessageLimits(message([section('s'.repeat(3001))]));
    expect(v).toEqual(['blocks[0].text: section text is 3001 chars > 3000']);
  });

  it('catches a 76-character button', () => {
    const v = checkMessageLimits(message([{ type: 'actions', elements: [button('b'.repeat(76))] }]));
    expect(v).toEqual(['blocks[0].elements[0].text: button text is 76 chars > 75']);
  });

  it('catches every other limit it knows', () => {
    const cases: Array<[unknown[], RegExp]> = [
      [
        [{ type: 'header', text: { type: 'plain_text', text: 'h'.repeat(151) } }],
        /header text is 151 chars > 150/,
      ],
      [[{ type: 'header', text: { type: 'mrkdwn', text: 'h' } }], /header text must be plain_text/],
      [
        [{ type: 'context', elements: Array.from({ length: 11 }, () => ({ type: 'mrkdwn', text: 'c' })) }],
        /11 elements > 10/,
      ],
      [
        [{ type: 'actions', elements: Array.from({ length: 26 }, (_, i) => button(`b${i}`)) }],
        /26 elements > 25/,
      ],
      [[{ type: 'actions', elements: [] }], /non-empty list/],
      [
        [
          {
            type: 'actions',
            elements: [
              button('x', {
                confirm: {
                  title: { type: 'plain_text', text: 't'.repeat(101) },
                  text: { type: 'plain_text', text: 't'.repeat(301) },
                  confirm: { type: 'plain_text', text: 'c'.repeat(31) },
                  deny: { type: 'plain_text', text: 'd'.repeat(31) },
                },
              }),
            ],
          },
        ],
        /confirm title is 101[\s\S]*confirm text is 301[\s\S]*confirm button is 31[\s\S]*deny button is 31/,
      ],
      [[{ type: 'actions', elements: [button('x', { value: 'v'.repeat(2001) })] }], /button value is 2001/],
      [[{ type: 'actions', elements: [button('x', { style: 'blue' })] }], /style must be primary or danger/],
      [
        [
          {
            type: 'actions',
            elements: [button('x', { action_id: 'same' }), button('y', { action_id: 'same' })],
          },
        ],
        /duplicate action_id/,
      ],
      [
        [
          { ...section('a'), block_id: 'b' },
          { ...section('b'), block_id: 'b' },
        ],
        /duplicate block_id b/,
      ],
      [[{ ...section('a'), block_id: 'i'.repeat(256) }], /block_id is 256 chars > 255/],
      [
        [{ type: 'actions', elements: [button('x', { action_id: 'i'.repeat(256) })] }],
        /action_id is 256 chars > 255/,
      ],
      [[section('')], /section text is empty/],
      [[{ type: 'section' }], /neither text nor fields/],
      [
        [{ type: 'section', fields: Array.from({ length: 11 }, () => ({ type: 'mrkdwn', text: 'f' })) }],
        /11 fields > 10/,
      ],
      [[{ type: 'section', fields: [{ type: 'mrkdwn', text: 'f'.repeat(2001) }] }], /section field is 2001/],
      [[{ nottype: 1 }], /block has no type/],
      [
        [{ type: 'rich_thing', deep: { inner: { type: 'plain_text', text: 'x'.repeat(3001) } } }],
        /text is 3001 chars > 3000/,
      ],
      [
        Array.from({ length: 4 }, () => section('t'.repeat(2900))),
        /11600 characters of text across blocks > 11000/,
      ],
    ];
    for (const [blocks, expected] of cases) {
      expect(checkMessageLimits(message(blocks)).join('\n')).toMatch(expected);
    }
  });

  it('checks the top-level text', () => {
    expect(checkMessageLimits({ blocks: [section('x')] })).toEqual([
      'text: fallback text is missing (notifications and screen readers use it)',
    ]);
    expect(checkMessageLimits({ text: 't'.repeat(4001), blocks: [] })).toEqual(['text: 4001 chars > 4000']);
    expect(checkMessageLimits({ text: 'ok', blocks: 'nope' })).toEqual(['blocks: must be an array']);
  });

  it('counts text in every text object', () => {
    expect(countBlockText([section('abc'), { type: 'actions', elements: [button('de')] }])).toBe(5);
  });
});

describe('checkViewLimits', () => {
  const modal = {
    type: 'modal',
    callback_id: 'cb',
    title: { type: 'plain_text', text: 'Title' },
    submit: { type: 'plain_text', text: 'Send' },
    blocks: [],
  };

  it('accepts a small modal and catches long titles and metadata', () => {
    expect(checkViewLimits(modal)).toEqual([]);
    expect(checkViewLimits({ ...modal, title: { type: 'plain_text', text: 't'.repeat(25) } })).toEqual([
      'title: title is 25 chars > 24',
    ]);
    expect(checkViewLimits({ ...modal, private_metadata: 'm'.repeat(3001) })).toEqual([
      'private_metadata: private_metadata is 3001 chars > 3000',
    ]);
  });

  it('requires submit when the modal has an input', () => {
    const input = {
      type: 'input',
      label: { type: 'plain_text', text: 'L' },
      element: { type: 'plain_text_input', action_id: 'i' },
    };
    expect(checkViewLimits({ ...modal, submit: undefined, blocks: [input] })).toEqual([
      'submit: submit is missing',
    ]);
  });
});

describe('escaping', () => {
  it('escapes only & < >, & first', () => {
    expect(escapeMrkdwn('a & b < c > d')).toBe('a &amp; b &lt; c &gt; d');
    expect(escapeMrkdwn('&lt;')).toBe('&amp;lt;');
    expect(escapeMrkdwn('<!channel> <@U123> <https://evil|docs>')).toBe(
      '&lt;!channel&gt; &lt;@U123&gt; &lt;https://evil|docs&gt;',
    );
    expect(escapeMrkdwn('*bold* _it_ "q" \'s\'')).toBe('*bold* _it_ "q" \'s\'');
  });

  it('defuses bare @here, @channel and @everyone', () => {
    expect(escapeMrkdwn('hi @here and @Channel, @everyone; me@example.com')).toBe(
      'hi @\u200Bhere and @\u200BChannel, @\u200Beveryone; me@example.com',
    );
  });

  it('truncate cuts after escaping, never inside an entity, with a note that fits', () => {
    expect(truncate('short', 100)).toBe('short');
    const out = truncate('&'.repeat(100), 40);
    expect(out.length).toBeLessThanOrEqual(40);
    expect(out).toMatch(/^(&amp;)+… \d+ more characters$/);
    const kept = (out.match(/&amp;/g) ?? []).length;
    expect(out).toContain(`… ${100 - kept} more characters`);
    for (const max of [25, 26, 27, 28, 29, 30, 100]) {
      expect(truncate('<'.repeat(500), max).length).toBeLessThanOrEqual(max);
    }
  });

  it('truncate counts characters, not UTF-16 units, and never splits a pair', () => {
    const out = truncate('😀'.repeat(50), 40);
    expect(out.length).toBeLessThanOrEqual(40);
    expect(out).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
    const kept = Array.from(out.split('…')[0]!).length;
    expect(out).toContain(`… ${50 - kept} more characters`);
  });

  it('clip uses a bare ellipsis', () => {
    expect(clip('abcdef', 4)).toBe('abc…');
    expect(clip('abc', 4)).toBe('abc');
    expect(clip('<<<', 4)).toBe('…');
  });

  it('clip and quote keep host text on one line, and still escape it', () => {
    expect(clip('read\n*Decided by:* <!here> @channel &', 100)).toBe(
      'read *Decided by:* &lt;!here&gt; @\u200Bchannel &amp;',
    );
    expect(quote('a\nb', 40)).toBe('“a b”');
    // A line break is one character for one: the cut falls where it did.
    expect(clip('ab\ncdef', 5)).toBe('ab c…');
    // Other line ends show as what they are, as hidden characters do: they break no line either.
    expect(clip('a\r\u2028b', 40)).toBe('a⟨U+000D⟩⟨U+2028⟩b');
  });

  it('codeBlock escapes, breaks up ``` and keeps within max', () => {
    const block = codeBlock('a ``` <!here> ```` b', 200);
    expect(block.startsWith('```\n')).toBe(true);
    expect(block.endsWith('\n```')).toBe(true);
    expect(block.match(/```/g)).toHaveLength(2);
    expect(block).toContain('&lt;!here&gt;');
    const long = codeBlock('x'.repeat(5000), 300);
    expect(long.length).toBeLessThanOrEqual(300);
    expect(long).toMatch(/^```\nx+\n```\n… \d+ more characters$/);
    expect(codeBlock('', 100)).toBe('```\n \n```');
  });

  it('inlineCode keeps one line and no backticks', () => {
    expect(inlineCode('a`b\nc', 50)).toBe('`aˋb⟨U+000A⟩c`');
    expect(inlineCode('', 50)).toBe('_(empty)_');
    const long = inlineCode('p'.repeat(1000), 100);
    expect(long.length).toBeLessThanOrEqual(100);
    expect(long).toMatch(/^`p+`… \d+ more characters$/);
  });

  it('quote puts the cut note outside the quotes', () => {
    expect(quote('title', 50)).toBe('“title”');
    expect(quote('t'.repeat(500), 100)).toMatch(/^“t+”… \d+ more characters$/);
  });
});

describe('describeDecision', () => {
  it('uses human words for known decisions', () => {
    expect(describeDecision('approved')).toBe('Approved (this request only)');
    expect(describeDecision('approvedForSession')).toBe('Approved for the rest of the session');
    expect(describeDecision('approvedPolicyAmendment')).toBe(
      'Approved, and a rule was saved to allow it again',
    );
    expect(describeDecision('denied')).toBe('Denied');
    expect(describeDecision('abort')).toBe('Rejected');
    expect(describeDecision('timedOut')).toBe('Timed out');
  });

  it('shows unknown decisions as sent, escaped', () => {
    expect(describeDecision('snoozed<!here>')).toBe('snoozed&lt;!here&gt;');
    expect(describeDecision('toString')).toBe('toString');
  });

  it('tells approve from reject', () => {
    expect(
      ['approved', 'approvedForSession', 'abort', 'denied', 'deniedPolicyAmendment', 'timedOut'].map(
        decisionTone,
      ),
    ).toEqual(['approve', 'approve', 'reject', 'reject', 'reject', 'other']);
  });
});

describe('feedback modal', () => {
  const metadata = { channel: 'C0APPROVALS', ts: '1754590943.000100', sourceIndex: 1, choiceId: 'abort' };

  it('is a modal within limits carrying the metadata', () => {
    const view = renderFeedbackModal({ metadata, choiceLabel: 'Reject', tool: 'bash' });
    expect(checkViewLimits(view)).toEqual([]);
    expect(view.type).toBe('modal');
    expect(view.callback_id).toBe(FEEDBACK_VIEW_CALLBACK_ID);
    expect(JSON.parse(view.private_metadata!)).toEqual(metadata);
    expect(view.blocks[1]).toMatchObject({
      type: 'input',
      block_id: FEEDBACK_BLOCK_ID,
      optional: true,
      label: { type: 'plain_text', text: 'Reason (optional)' },
      element: {
        type: 'plain_text_input',
        action_id: FEEDBACK_INPUT_ACTION_ID,
        multiline: true,
        max_length: 2000,
      },
    });
    expect(view).toMatchSnapshot();
  });

  it('escapes the choice label and tool', () => {
    const view = renderFeedbackModal({ metadata, choiceLabel: '<!channel>', tool: '<@U123>'.repeat(100) });
    expect(checkViewLimits(view)).toEqual([]);
    const line = JSON.stringify(view.blocks[0]);
    expect(line).toContain('&lt;!channel&gt;');
    expect(line).not.toContain('<!channel>');
    expect(line).not.toContain('<@U123>');
  });

  it('refuses metadata Slack could not carry', () => {
    expect(() =>
      renderFeedbackModal({
        metadata: { ...metadata, choiceId: 'c'.repeat(3000) },
        choiceLabel: 'x',
        tool: 'y',
      }),
    ).toThrow(/metadata/);
  });

  it('reads the typed reason, trimmed, and nothing else', () => {
    const values = (value: unknown) => ({
      [FEEDBACK_BLOCK_ID]: { [FEEDBACK_INPUT_ACTION_ID]: { type: 'plain_text_input', value } },
    });
    expect(readFeedback(values('  use a branch \n'))).toBe('use a branch');
    expect(readFeedback(values('   '))).toBeUndefined();
    expect(readFeedback(values(null))).toBeUndefined();
    expect(readFeedback({})).toBeUndefined();
    expect(readFeedback(undefined)).toBeUndefined();
    expect(readFeedback({ other: { x: { value: 'no' } } })).toBeUndefined();
  });
});
