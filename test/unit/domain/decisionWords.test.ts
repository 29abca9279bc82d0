import { describe, expect, it } from 'vitest';
import { outlastsRequest, timeoutChoice } from '../../../src/domain/decisionWords.js';

describe('outlastsRequest', () => {
  it('an approval whose decision keeps a grant outlasts the request, whatever its scope says', () => {
    // A host that sends the two at odds is read the worse way: a stand-in may not pick either.
    expect(outlastsRequest({ decision: 'approvedPolicyAmendment', scope: 'once' })).toBe(true);
    expect(outlastsRequest({ decision: 'approvedForSession', scope: 'once' })).toBe(true);
  });

  it('as does anything not rejecting with a scope past once', () => {
    expect(outlastsRequest({ decision: 'approved', scope: 'session' })).toBe(true);
    expect(outlastsRequest({ decision: 'snooze', scope: 'localPersistent' })).toBe(true);
  });

  it('an approval of this request, and any rejection, do not', () => {
    expect(outlastsRequest({ decision: 'approved', scope: 'once' })).toBe(false);
    expect(outlastsRequest({ decision: 'abort', scope: 'localPersistent' })).toBe(false);
    expect(outlastsRequest({ decision: 'deniedPolicyAmendment', scope: 'session' })).toBe(false);
  });
});

describe('timeoutChoice', () => {
  const abort = { choiceId: 'abort', label: 'Reject', decision: 'abort', scope: 'once' };
  const denyRule = {
    choiceId: 'deny_rule',
    label: 'Always deny',
    decision: 'deniedPolicyAmendment',
    scope: 'localPersistent',
    acceptsFeedback: true,
  };

  it('rejects this request only, even when a lasting deny takes feedback', () => {
    expect(timeoutChoice([abort, denyRule])?.choiceId).toBe('abort');
    expect(
      timeoutChoice([abort, { ...denyRule, choiceId: 'deny_session', decision: 'denied', scope: 'session' }])
        ?.choiceId,
    ).toBe('abort');
  });

  it('still prefers, among rejections of this request, one that takes feedback', () => {
    const withReason = {
      choiceId: 'deny',
      label: 'Deny',
      decision: 'denied',
      scope: 'once',
      acceptsFeedback: true,
    };
    expect(timeoutChoice([abort, withReason])?.choiceId).toBe('deny');
  });

  it('picks no rejection that may keep a rule: none, when that is all the host offers', () => {
    expect(timeoutChoice([denyRule])).toBeUndefined();
    // A host that sends a rule-keeping word with scope once is read the worse way.
    expect(timeoutChoice([{ ...denyRule, scope: 'once' }])).toBeUndefined();
    expect(timeoutChoice([{ ...abort, scope: 'session' }])).toBeUndefined();
  });
});
