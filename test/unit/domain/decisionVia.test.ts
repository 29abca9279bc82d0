// The closed set of `via` the audit stream and the log's decision line share (domain/audit.ts).

import { describe, expect, it } from 'vitest';
import { decisionVia } from '../../../src/domain/audit.js';

describe('decisionVia', () => {
  it.each([
    [{ resolvedBy: 'user', slackUserId: 'U0ALICE', via: 'click' as const }, 'click'],
    // A record stored before claims said `via`: a Slack user still means a click.
    [{ resolvedBy: 'user', slackUserId: 'U0ALICE' }, 'click'],
    [{ resolvedBy: 'user', via: 'grant' as const }, 'grant'],
    [{ resolvedBy: 'user', via: 'timeout' as const }, 'timeout'],
    [{ resolvedBy: 'policy' }, 'policy'],
    [{ resolvedBy: 'llmJudge' }, 'reviewer'],
    [{ resolvedBy: 'user' }, 'otherClient'],
    [{ resolvedBy: 'someNewReviewer' }, 'host'],
  ])('%o is %s', (resolution, via) => {
    expect(decisionVia(resolution)).toBe(via);
  });
});
