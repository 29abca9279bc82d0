// A modal's submission becomes a click from its private_metadata alone: where the card is and
// which choice; anything else there is ignored, and metadata that does not parse gives no click.

import { describe, expect, it } from 'vitest';
import { clickOfModal, takenSubmitAnswer } from '../../../src/slack/listeners/modalClick.js';

const WHERE = { channel: 'C0APPROVALS', ts: '1700000000.000100', sourceIndex: 0, choiceId: 'allow_once' };

describe('clickOfModal', () => {
  it('reads the card, the choice and the question shown, and the approval id as a hint only', () => {
    const metadata = { ...WHERE, approvalId: 'a-1', askedAs: 'q1' };
    expect(clickOfModal(JSON.stringify(metadata), 'U0ALICE', 42)).toEqual({
      ...WHERE,
      approvalHint: 'a-1',
      askedAs: 'q1',
      userId: 'U0ALICE',
      receivedAt: 42,
      from: 'modal',
    });
  });

  it('takes nothing else the metadata carries, such as a decision or a typed text', () => {
    const metadata = { ...WHERE, askedAs: 'q1', typed: 'main', decision: 'approved' };
    const click = clickOfModal(JSON.stringify(metadata), 'U0BOB', 1);
    expect(click).toEqual({ ...WHERE, askedAs: 'q1', userId: 'U0BOB', receivedAt: 1, from: 'modal' });
  });

  it('gives a click that names no question for metadata without the question shown', () => {
    for (const askedAs of [undefined, '']) {
      expect(clickOfModal(JSON.stringify({ ...WHERE, approvalId: 'a-1', askedAs }), 'U0ALICE', 42)).toEqual({
        ...WHERE,
        approvalHint: 'a-1',
        namesNoQuestion: true,
        userId: 'U0ALICE',
        receivedAt: 42,
        from: 'modal',
      });
    }
  });

  it('gives no click for metadata that is not JSON or lacks where the card is', () => {
    expect(clickOfModal('not json', 'U0ALICE', 1)).toBeUndefined();
    expect(clickOfModal(JSON.stringify({ ...WHERE, ts: undefined }), 'U0ALICE', 1)).toBeUndefined();
    expect(clickOfModal(JSON.stringify({ ...WHERE, sourceIndex: 'x' }), 'U0ALICE', 1)).toBeUndefined();
  });
});

describe('takenSubmitAnswer', () => {
  it('closes every view when the modal was pushed on top of another (the full view), else just itself', () => {
    expect(takenSubmitAnswer({ previous_view_id: 'V000001' })).toEqual({ response_action: 'clear' });
    expect(takenSubmitAnswer({ previous_view_id: null })).toBeUndefined();
    expect(takenSubmitAnswer({})).toBeUndefined();
  });
});
