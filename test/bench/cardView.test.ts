import { describe, expect, it } from 'vitest';
import { cardView } from '../../bench/lib/cardView.js';
import { renderCard } from '../../src/cards/renderCard.js';
import type { ApprovalRecord } from '../../src/domain/record.js';
import { cardMetadata } from '../../src/slack/cardMetadata.js';
import { APPROVER, fileRecord, inPhase, NOW, shellRecord } from '../support/cardFixtures.js';
import type { SlackMessage } from '../support/fakeSlack.js';

// The chaos audit reads cards the way the bot renders them: these are the bot's own renders.

/** The card as the bot posts it; `metadata: null` posts it without any. */
function posted(
  record: ApprovalRecord,
  metadata: Record<string, unknown> | null = { ...cardMetadata(record.approvalId) },
): SlackMessage {
  const { text, blocks } = renderCard(record, { now: NOW });
  return {
    channel: 'C0CHAOS',
    ts: '1000.000001',
    text,
    blocks,
    versions: [],
    ...(metadata ? { metadata } : {}),
  };
}

describe('cardView', () => {
  it('reads a pending card: its approval, headline and the buttons of the stage it asks', () => {
    const view = cardView(posted(shellRecord(2)))!;
    expect(view.approvalId).toBe(shellRecord(2).approvalId);
    expect(view.headline).toBe('Approval needed');
    expect(view.buttons.map((b) => [b.sourceIndex, b.choiceId])).toEqual([
      [1, 'allow_once'],
      [1, 'abort'],
    ]);
    expect(view.decidedBy).toBeUndefined();
  });

  it('reads whom a final card credits: a Slack user, or the words for policy', () => {
    const byUser = cardView(posted(inPhase(fileRecord(), 'resolved', 'user')))!;
    expect(byUser).toMatchObject({ headline: 'Approved', buttons: [], decidedBy: { userId: APPROVER } });
    const byPolicy = cardView(posted(inPhase(fileRecord(), 'resolved', 'policy')))!;
    expect(byPolicy).toMatchObject({ headline: 'Rejected', buttons: [], decidedBy: { words: 'policy' } });
  });

  it('reads the open and closed phases without buttons', () => {
    expect(cardView(posted(inPhase(fileRecord(), 'deciding')))?.headline).toBe('Being decided');
    expect(cardView(posted(inPhase(fileRecord(), 'superseded')))?.headline).toBe('Superseded');
    const held = cardView(posted(fileRecord({ phase: 'unavailable', unavailable: 'heldElsewhere' })))!;
    expect(held).toMatchObject({
      headline: 'Cannot be decided from Slack now',
      heldElsewhere: true,
      buttons: [],
    });
  });

  it('is not fooled by a message without the card metadata', () => {
    expect(cardView(posted(fileRecord(), null))).toBeUndefined();
    expect(
      cardView(posted(fileRecord(), { event_type: 'other', event_payload: { approval_id: 'x' } })),
    ).toBeUndefined();
  });
});
