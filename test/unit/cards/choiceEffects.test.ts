import { describe, expect, it } from 'vitest';
import { misleadingLabel } from '../../../src/cards/choiceEffects.js';
import { checkMessageLimits } from '../../../src/cards/limits.js';
import { renderCard } from '../../../src/cards/renderCard.js';
import type { ApprovalRecord } from '../../../src/domain/record.js';
import type { ApprovalChoice } from '../../../src/msp/protocol.js';
import {
  allText,
  buttons,
  FILE_CHOICES,
  fileRecord,
  NOW,
  shellRecord,
  texts,
} from '../../support/cardFixtures.js';

const render = (record: ApprovalRecord) => renderCard(record, { now: NOW });
const withChoices = (availableChoices: ApprovalChoice[]) => render(fileRecord({ availableChoices }));
const choice = (label: string, decision: string, scope: string): ApprovalChoice => ({
  choiceId: `c_${label.length}_${decision}`,
  label,
  decision,
  scope,
});
const WARNING = ':warning:';

describe('renderChoices: the bot says what a button does when its label could mislead', () => {
  it('an approving "Reject" that keeps a rule: the bot says so, and the button asks first', () => {
    const card = withChoices([choice('Reject', 'approvedPolicyAmendment', 'localPersistent')]);
    expect(checkMessageLimits(card)).toEqual([]);
    expect(allText(card)).toContain(`${WARNING} “Reject” approves, and the host keeps it as a rule for good`);
    const [b] = buttons(card);
    expect(b!.text).toBe('Reject');
    expect(b!.confirm).toMatchObject({
      title: { type: 'plain_text', text: 'Allow this for good?' },
      confirm: { type: 'plain_text', text: 'Approve' },
      deny: { type: 'plain_text', text: 'Cancel' },
    });
    expect(JSON.stringify(b!.confirm)).toContain('keeps it as a rule for good');
  });

  it('an approval whose label hides how long it lasts', () => {
    const text = allText(
      withChoices([
        choice('Allow once', 'approvedForSession', 'session'),
        choice('Allow for this session', 'approved', 'localPersistent'),
        choice('Go on', 'approved', 'forEver'),
        choice('OK', 'approvedPolicyAmendment', 'once'),
      ]),
    );
    expect(text).toContain(
      `${WARNING} “Allow once” approves, and the host keeps allowing it for the rest of the session`,
    );
    expect(text).toContain(
      `${WARNING} “Allow for this session” approves, and the host keeps it as a rule for good`,
    );
    expect(text).toContain(`${WARNING} “Go on” approves, and the host keeps it past this request`);
    expect(text).toContain(`${WARNING} “OK” approves, and the host keeps it as a rule for good`);
  });

  it('labels whose words say the opposite of the decision', () => {
    const card = withChoices([
      choice('Deny', 'approved', 'once'),
      choice("Don't allow", 'approved', 'once'),
      choice('Allow once', 'abort', 'once'),
      choice('Yes', 'denied', 'once'),
    ]);
    const text = allText(card);
    expect(text).toContain(`${WARNING} “Deny” approves this request only`);
    expect(text).toContain(`${WARNING} “Don't allow” approves this request only`);
    expect(text).toContain(`${WARNING} “Allow once” rejects`);
    expect(text).toContain(`${WARNING} “Yes” rejects`);
    const bs = buttons(card);
    expect(bs.map((b) => b.confirm !== undefined)).toEqual([true, true, true, true]);
    // The dialog's confirm button says what happens, never the label that contradicts it.
    expect(bs.map((b) => (b.confirm?.confirm as { text: string } | undefined)?.text)).toEqual([
      'Approve',
      'Approve',
      'Reject',
      'Reject',
    ]);
  });

  it('writes a label as text: it cannot format, link or ping', () => {
    const card = withChoices([choice('*<!here>* :tada:', 'approvedForSession', 'session')]);
    const text = texts(card, ['mrkdwn']).join('\n');
    expect(text).not.toContain('<!here>');
    expect(text).not.toContain(':tada:');
    expect(text).toContain('approves, and the host keeps allowing it for the rest of the session');
  });

  it('says nothing new for the choices hosts offer', () => {
    const ordinary: ApprovalChoice[] = [
      ...FILE_CHOICES,
      choice('Allow for session', 'approvedForSession', 'session'),
      choice('Always allow in this workspace: npm test ...', 'approvedPolicyAmendment', 'localPersistent'),
      choice('Always allow: docker stop web', 'approvedPolicyAmendment', 'localPersistent'),
      choice('Reject with feedback', 'abort', 'once'),
      choice('Deny', 'denied', 'once'),
      choice('Always deny', 'deniedPolicyAmendment', 'session'),
      choice("Yes, and don't ask again this session", 'approvedForSession', 'session'),
      choice('Ask later', 'snooze', 'once'),
    ];
    for (const card of [withChoices(ordinary), render(shellRecord(1)), render(shellRecord(2))]) {
      expect(allText(card)).not.toContain(WARNING);
      for (const b of buttons(card)) {
        if (b.style !== 'danger') expect(b.confirm).toBeUndefined();
      }
    }
  });

  it('keeps within Slack limits with many mislabelled choices and long labels', () => {
    const many = Array.from({ length: 60 }, (_, i) =>
      choice(`Reject ${i} ${'x'.repeat(300)}`, 'approvedPolicyAmendment', 'localPersistent'),
    ).map((c, i) => ({ ...c, choiceId: `c${i}` }));
    const card = withChoices(many);
    expect(checkMessageLimits(card)).toEqual([]);
    expect(allText(card)).toContain(WARNING);
    expect(buttons(card).every((b) => b.confirm !== undefined)).toBe(true);
  });

  it('judges what a label says of its reach on what its button shows, not on words cut off', () => {
    const hidden = `Allow once ${'x'.repeat(600)} always`;
    expect(
      misleadingLabel({ decision: 'approvedPolicyAmendment', scope: 'localPersistent' }, hidden),
    ).toEqual({
      tone: 'approve',
      reach: 'rule',
      effect: 'approves, and the host keeps it as a rule for good',
    });
    const card = withChoices([choice(hidden, 'approvedPolicyAmendment', 'localPersistent')]);
    expect(allText(card)).toContain('approves, and the host keeps it as a rule for good');
    const [b] = buttons(card);
    expect(b!.text).not.toContain('always');
    expect(b!.confirm).toMatchObject({
      title: { text: 'Allow this for good?' },
      confirm: { text: 'Approve' },
    });
    // A reach word the button shows still counts, however long the rest.
    const shown = `Always allow ${'x'.repeat(600)}`;
    expect(
      misleadingLabel({ decision: 'approvedPolicyAmendment', scope: 'localPersistent' }, shown),
    ).toBeUndefined();
  });

  it('judges labels at the width their buttons get when many choices share the budget', () => {
    const rejects = Array.from({ length: 60 }, (_, i) => ({
      ...choice('Reject', 'abort', 'once'),
      choiceId: `r${i}`,
    }));
    // Fits a full-width button with its "always"; cut to fit beside 60 reject dialogs, it loses it.
    const label = `Allow ${'x'.repeat(20)} always`;
    const card = withChoices([...rejects, choice(label, 'approvedPolicyAmendment', 'localPersistent')]);
    expect(checkMessageLimits(card)).toEqual([]);
    const b = buttons(card).at(-1)!;
    expect(b.text).not.toContain('always');
    expect(allText(card)).toContain('approves, and the host keeps it as a rule for good');
    expect(b.confirm).toMatchObject({ confirm: { text: 'Approve' } });
  });

  it('a word saying the opposite of the decision counts even where the button cuts it off', () => {
    const tail = 'x'.repeat(600);
    expect(
      misleadingLabel({ decision: 'approved', scope: 'once' }, `Allow once ${tail} reject`)?.effect,
    ).toBe('approves this request only');
    // A rejection whose button says "Allow", whatever is cut off after it.
    expect(misleadingLabel({ decision: 'abort', scope: 'once' }, `Allow ${tail} reject`)?.effect).toBe(
      'rejects',
    );
  });

  it('a decision word this bot does not know, lasting past the request: it may approve, and asks first', () => {
    const card = withChoices([
      choice('Allow once', 'approve', 'localPersistent'),
      choice('Allow once', 'allowAlways', 'session'),
      choice('Go on', 'proceedLater', 'forEver'),
    ]);
    expect(checkMessageLimits(card)).toEqual([]);
    const text = allText(card);
    expect(text).toContain(`${WARNING} “Allow once” may approve, and the host keeps it as a rule for good`);
    expect(text).toContain(
      `${WARNING} “Allow once” may approve, and the host keeps allowing it for the rest of the session`,
    );
    expect(text).toContain(`${WARNING} “Go on” may approve, and the host keeps it past this request`);
    const bs = buttons(card);
    expect(bs.map((b) => (b.confirm?.title as { text: string } | undefined)?.text)).toEqual([
      'Allow this for good?',
      'Allow for the session?',
      'Allow past this request?',
    ]);
    // The bot cannot call it an approval, nor repeat the label it doubts.
    expect(bs.map((b) => (b.confirm?.confirm as { text: string } | undefined)?.text)).toEqual([
      'Confirm',
      'Confirm',
      'Confirm',
    ]);
    // Of this request only, or under a label that says it approves and for how long: nothing.
    expect(misleadingLabel({ decision: 'snooze', scope: 'once' }, 'Ask later')).toBeUndefined();
    expect(
      misleadingLabel({ decision: 'allowAlways', scope: 'localPersistent' }, 'Always allow'),
    ).toBeUndefined();
    expect(misleadingLabel({ decision: 'snooze', scope: 'session' }, 'Ask later this session')?.effect).toBe(
      'may approve, and the host keeps allowing it for the rest of the session',
    );
  });

  it('reads disallow, denied, refuse and rejected as reject words, whole and in any case', () => {
    for (const label of ['Disallow', 'DENIED', 'Refuse', 'Rejected']) {
      expect(misleadingLabel({ decision: 'approved', scope: 'once' }, label)?.effect).toBe(
        'approves this request only',
      );
    }
    expect(misleadingLabel({ decision: 'abort', scope: 'once' }, 'Disallow')).toBeUndefined();
    // Part of a word is no word: "Unrejected" holds "rejected" but is not it.
    expect(misleadingLabel({ decision: 'approved', scope: 'once' }, 'Unrejected')).toBeUndefined();
  });

  it('a label naming a shorter reach than the choice keeps is misleading, "always" or not', () => {
    expect(
      misleadingLabel(
        { decision: 'approvedPolicyAmendment', scope: 'localPersistent' },
        'Allow always for this session',
      )?.effect,
    ).toBe('approves, and the host keeps it as a rule for good');
    expect(
      misleadingLabel({ decision: 'approvedForSession', scope: 'session' }, 'Always allow once')?.effect,
    ).toBe('approves, and the host keeps allowing it for the rest of the session');
    expect(
      misleadingLabel({ decision: 'approvedForSession', scope: 'session' }, 'Always allow in this session'),
    ).toBeUndefined();
  });
});
