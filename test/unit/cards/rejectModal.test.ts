import { describe, expect, it } from 'vitest';
import { BUDGET_LEVELS } from '../../../src/cards/budget.js';
import {
  FEEDBACK_BLOCK_ID,
  FEEDBACK_INPUT_ACTION_ID,
  QUICK_REASON_ACTION_ID,
  QUICK_REASON_BLOCK_ID,
} from '../../../src/cards/ids.js';
import { checkViewLimits } from '../../../src/cards/limits.js';
import { renderApprovers } from '../../../src/cards/renderApprovers.js';
import { readReason, renderFeedbackModal } from '../../../src/cards/renderFeedbackModal.js';

// The reject modal a route's rules shape, what its submit reads, and the card's approvers line.

const metadata = {
  channel: 'C0APPROVALS',
  ts: '1754590943.000100',
  sourceIndex: 0,
  choiceId: 'abort',
  approvalId: 'appr-1',
};

type Block = { type: string; block_id?: string; element?: { type: string; options?: unknown[] } };

describe('the reject modal', () => {
  it('shows the command escaped, the quick reasons as radio buttons and a required reason', () => {
    const view = renderFeedbackModal({
      metadata,
      choiceLabel: 'Reject',
      tool: 'bash',
      subject: 'git push --force <!channel>',
      rejectReason: 'required',
      quickReasons: ['Use a PR instead', 'Not during a freeze'],
    });
    expect(checkViewLimits(view)).toEqual([]);
    expect(JSON.parse(view.private_metadata!)).toEqual(metadata);
    const blocks = view.blocks as Block[];
    const text = JSON.stringify(blocks);
    expect(text).toContain('git push --force &lt;!channel&gt;');
    expect(text).not.toContain('<!channel>');
    const quick = blocks.find((b) => b.block_id === QUICK_REASON_BLOCK_ID)!;
    expect(quick.element).toMatchObject({
      type: 'radio_buttons',
      options: [
        { text: { type: 'plain_text', text: 'Use a PR instead' }, value: 'Use a PR instead' },
        { text: { type: 'plain_text', text: 'Not during a freeze' }, value: 'Not during a freeze' },
      ],
    });
    // Optional for Slack, so a quick reason alone can be sent: the submit enforces "required".
    expect(blocks.find((b) => b.block_id === FEEDBACK_BLOCK_ID)).toMatchObject({
      optional: true,
      label: { text: 'Reason (required)' },
    });
  });

  it('offers more than ten quick reasons as a menu', () => {
    const reasons = Array.from({ length: 12 }, (_, i) => `reason ${i}`);
    const view = renderFeedbackModal({
      metadata,
      choiceLabel: 'Reject',
      tool: 'bash',
      quickReasons: reasons,
    });
    expect(checkViewLimits(view)).toEqual([]);
    const quick = (view.blocks as Block[]).find((b) => b.block_id === QUICK_REASON_BLOCK_ID)!;
    expect(quick.element?.type).toBe('static_select');
    expect(quick.element?.options).toHaveLength(12);
  });

  it('without quick reasons or subject, is the plain optional reason', () => {
    const view = renderFeedbackModal({ metadata, choiceLabel: 'Reject', tool: 'bash' });
    const blocks = view.blocks as Block[];
    expect(blocks.map((b) => b.type)).toEqual(['context', 'input']);
    expect(blocks[1]).toMatchObject({ label: { text: 'Reason (optional)' } });
  });

  it('sends the quick reason, the typed one, or both as "quick: typed"', () => {
    const values = (typed: string | null, quick?: string) => ({
      [FEEDBACK_BLOCK_ID]: { [FEEDBACK_INPUT_ACTION_ID]: { type: 'plain_text_input', value: typed } },
      ...(quick === undefined
        ? {}
        : { [QUICK_REASON_BLOCK_ID]: { [QUICK_REASON_ACTION_ID]: { selected_option: { value: quick } } } }),
    });
    expect(readReason(values('  not now '))).toBe('not now');
    expect(readReason(values(null, 'Use a PR instead'))).toBe('Use a PR instead');
    expect(readReason(values('it touches prod', 'Use a PR instead'))).toBe(
      'Use a PR instead: it touches prod',
    );
    expect(readReason(values('   ', '  '))).toBeUndefined();
    expect(readReason(undefined)).toBeUndefined();
  });
});

describe("the card's approvers line", () => {
  const budget = BUDGET_LEVELS[0]!;
  const textOf = (blocks: unknown[]) => JSON.stringify(blocks);

  it('lists names and the requester who may not decide, escaped', () => {
    const line = textOf(renderApprovers({ names: ['alice', '<!channel>'], notOwner: 'bob' }, budget));
    expect(line).toContain('Approvers: alice, &lt;!channel&gt; · not the requester (bob)');
    expect(line).not.toContain('<!channel>');
  });

  it('says when anyone but the requester may decide, and shows nothing when anyone may', () => {
    expect(textOf(renderApprovers({ notOwner: 'bob' }, budget))).toContain(
      'Anyone in this channel may decide · not the requester (bob)',
    );
    expect(renderApprovers(undefined, budget)).toEqual([]);
  });
});
