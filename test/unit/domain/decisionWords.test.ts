import { describe, expect, it } from 'vitest';
import { outlastsRequest } from '../../../src/domain/decisionWords.js';

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
