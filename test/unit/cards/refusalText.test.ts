// The sentence a person reads when their click changed nothing (refusalText): it says why, names
// whom to ask where that helps, and never lets what it quotes ping or link.

import { describe, expect, it } from 'vitest';
import {
  confirmationMismatchText,
  notAuthorizedInModalText,
  refusalText,
} from '../../../src/cards/renderUserMessages.js';
import type { Refused } from '../../../src/domain/authorization.js';
import type { Refusal } from '../../../src/domain/refusal.js';

const APPROVERS = { users: ['U0ALICE'], usergroups: ['S0SRE'] };
/** A refusal's reason without `allowed: false`, which every one has. */
type Why = Refused extends infer R ? (R extends unknown ? Omit<R, 'allowed'> : never) : never;

describe('refusalText', () => {
  it('says who decided first, and how', () => {
    expect(
      refusalText({
        code: 'alreadyResolved',
        decision: 'approved',
        resolvedBy: 'user',
        slackUserId: 'U0BOB',
      }),
    ).toContain('by <@U0BOB>');
    expect(refusalText({ code: 'alreadyResolved', decision: 'abort', resolvedBy: 'policy' })).toContain(
      'by policy',
    );
    expect(refusalText({ code: 'alreadyResolved', decision: 'abort', resolvedBy: 'llmJudge' })).toContain(
      'by the automated reviewer',
    );
    expect(refusalText({ code: 'alreadyResolved', decision: 'abort', resolvedBy: 'user' })).toContain(
      'by someone outside Slack',
    );
    // What the host calls its decider is quoted without the characters Slack reads as markup.
    expect(
      refusalText({ code: 'alreadyResolved', decision: 'abort', resolvedBy: '<!channel>' }),
    ).not.toContain('<!channel>');
    // ...as the agent host's word, never as if a person decided, defused and cut like card text.
    expect(
      refusalText({
        code: 'alreadyResolved',
        decision: 'approved',
        resolvedBy: 'Alice Smith (Security on-call, via Slack)',
      }),
    ).toContain('by the agent host (“Alice Smith (Security on-call, via Slack)”). Your click');
    const loud = refusalText({
      code: 'alreadyResolved',
      decision: 'abort',
      resolvedBy: `@channel ${'y'.repeat(500)}`,
    });
    expect(loud).toContain('by the agent host (“@\u200Bchannel y');
    expect(loud).not.toContain('y'.repeat(100));
  });

  it('tells someone whose own decision is on its way, and names whoever else is deciding', () => {
    expect(refusalText({ code: 'alreadyBeingDecided', self: true })).toBe(
      'Your decision on this step is already being sent.',
    );
    expect(refusalText({ code: 'alreadyBeingDecided', userId: 'U0BOB', self: false })).toContain(
      'by <@U0BOB>',
    );
    expect(refusalText({ code: 'alreadyBeingDecided', self: false })).toContain('by someone else');
  });

  it('counts a quorum’s votes, and says when the owner’s own approval does not count', () => {
    expect(refusalText({ code: 'voteCounted', votes: 1, quorum: 2 })).toContain(
      'until 1 more approver picks',
    );
    expect(refusalText({ code: 'voteCounted', votes: 1, quorum: 3 })).toContain(
      'until 2 more approvers pick',
    );
    expect(refusalText({ code: 'quorumNotMet', votes: 1, quorum: 2 })).toContain('only 1 of those');
    expect(refusalText({ code: 'ownerNoVote', quorum: 2 })).not.toContain('stand in');
    expect(refusalText({ code: 'ownerNoVote', quorum: 2, for: 'U0ALICE' })).toContain(
      'you stand in for <@U0ALICE>',
    );
    expect(refusalText({ code: 'standInOnce', for: 'U0ALICE' })).toContain(
      'allow this request once or reject it',
    );
  });

  it('says why a "don’t ask again" was not stored, and why the full text cannot be shown', () => {
    expect(refusalText({ code: 'grantNotStored', why: 'stageMoved' })).toContain('moved on to another step');
    expect(refusalText({ code: 'grantNotStored' })).toContain('database did not answer');
    expect(refusalText({ code: 'cannotShowFull', why: 'gone' })).toContain('no longer keeps');
    expect(refusalText({ code: 'cannotShowFull', why: 'unreadable' })).toContain('database is not answering');
    expect(refusalText({ code: 'cannotShowFull', why: 'late' })).toContain('please press View full again');
  });

  it('a form Slack did not open: nothing was decided, and the press is to be made again', () => {
    for (const form of ['reason', 'confirmation', 'fullView'] as const) {
      const text = refusalText({ code: 'formNotOpened', form });
      expect(text).toContain('Slack did not open');
      expect(text).toContain('nothing was decided');
      expect(text).toMatch(/press (the button|View full) again\.$/);
    }
  });

  it('a reason the route requires, missing: nothing was decided, and the press is to be made again', () => {
    expect(refusalText({ code: 'reasonRequired', route: 'ops', quickReasons: true })).toBe(
      'A reason is required to reject on ops: type one or pick a quick reason. Nothing was decided: press the button again, and give the reason in the form it opens.',
    );
    expect(refusalText({ code: 'reasonRequired', route: '<!here>', quickReasons: false })).toContain(
      'reject on &lt;!here&gt;: type one. Nothing',
    );
  });

  it('a press or a form that names no question is told as what it was: a button, or a form', () => {
    const button = refusalText({ code: 'questionChanged', why: 'unnamed' });
    const form = refusalText({ code: 'questionChanged', why: 'unnamedForm' });
    expect(button).toMatch(/^This button /);
    expect(form).toBe(
      'This form does not say which question it was opened for, so Countersign cannot tell whether it is still the one asked. Nothing was decided. The card now shows the current question: please press its button again.',
    );
  });

  it('a decision kept as Countersign stops is said to be kept, never that nothing was decided', () => {
    const kept = refusalText({ code: 'hostUnavailable', why: 'stopping' });
    expect(kept).toContain('It is kept');
    expect(kept).toContain('no need to click again');
    expect(kept).not.toContain('Nothing was decided');
    expect(kept).not.toBe(refusalText({ code: 'hostUnavailable' }));
  });

  it('quotes the host’s refusal without markup', () => {
    expect(refusalText({ code: 'decideFailed', kind: '<@U0EVE>&co' })).toContain('(&lt;@U0EVE&gt;&amp;co)');
    expect(refusalText({ code: 'decideFailed', kind: 'sandboxDenied' })).toContain('(sandboxDenied)');
  });

  it('quotes a refusal the host made up defused and short', () => {
    const text = refusalText({ code: 'decideFailed', kind: `@here \u202Eok ${'A'.repeat(5000)}` });
    expect(text).not.toMatch(/@here|\u202E/);
    expect(text).toContain('(@\u200Bhere ⟨U+202E⟩ok AAA');
    expect(text.length).toBeLessThan(200);
  });

  it('gives every other refusal a sentence of its own', () => {
    const plain: Refusal['code'][] = [
      'unknownCard',
      'superseded',
      'orphaned',
      'underReview',
      'questionChanged',
      'reviewerUnavailable',
      'hostUnavailable',
      'sessionElsewhere',
      'unknownToHost',
      'settledByHost',
      'notRecorded',
      'forwarded',
      'stopping',
      'cannotRemember',
    ];
    const texts = plain.map((code) => refusalText({ code } as Refusal));
    expect(new Set(texts).size).toBe(plain.length);
    for (const text of texts) expect(text.length).toBeGreaterThan(30);
  });

  it('names whom to ask when the person may not decide, and says what Slack did not confirm', () => {
    const refused = (r: Why) => refusalText({ code: 'notAuthorized', refused: r as Refused });
    expect(refused({ why: 'notApprover', route: 'ops', approvers: APPROVERS, protectedWrite: false })).toBe(
      'Only <@U0ALICE> or members of <!subteam^S0SRE> can decide on ops.',
    );
    expect(
      refused({
        why: 'notApprover',
        route: 'ops',
        approvers: { users: [], usergroups: [] },
        protectedWrite: true,
      }),
    ).toContain('only admins can decide protected writes on ops');
    expect(refused({ why: 'selfApproval', route: 'ops' })).toContain('your own agent');
    expect(refused({ why: 'routeGone', route: 'ops' })).toContain('no longer configured');
    expect(refused({ why: 'notRiskApprover', route: 'ops', risk: 'prod', approvers: APPROVERS })).toContain(
      'risk rule prod',
    );
    expect(refused({ why: 'external', route: 'ops' })).toContain('another Slack workspace');
    expect(refused({ why: 'guest', route: 'ops' })).toContain('Guests cannot');
    expect(refused({ why: 'notChannelMember', route: 'ops', channel: 'C0OPS' })).toContain('<#C0OPS>');
    for (const what of ['workspace', 'user', 'channel'] as const) {
      expect(refused({ why: 'unverified', route: 'ops', what })).toContain('try again in a minute');
    }
  });

  it('keeps the reject modal’s version plain: no mentions, a pointer to the message that has them', () => {
    const inModal = (r: Why) => notAuthorizedInModalText(r as Refused);
    expect(inModal({ why: 'notApprover', route: 'ops', approvers: APPROVERS, protectedWrite: true })).toBe(
      'You are not among those who can decide on protected writes on ops (any more): Countersign sent you a message naming them.',
    );
    expect(
      inModal({ why: 'notRiskApprover', route: 'ops', risk: 'prod', approvers: APPROVERS }),
    ).not.toContain('<@');
    expect(inModal({ why: 'notChannelMember', route: 'ops', channel: 'C0OPS' })).not.toContain('<#');
    expect(inModal({ why: 'guest', route: 'ops' })).toContain('Guests cannot');
  });
});

describe('confirmationMismatchText', () => {
  it('cuts a long target between characters, never inside an emoji', () => {
    const text = confirmationMismatchText({
      target: { text: `${'a'.repeat(79)}😀tail`, source: 'argument' },
      risks: [],
    });
    expect(text).toContain(`(${'a'.repeat(79)}…)`);
    expect(text).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/);
    const short = confirmationMismatchText({
      target: { text: '😀'.repeat(40), source: 'argument' },
      risks: [],
    });
    expect(short).toContain(`(${'😀'.repeat(40)})`);
  });
});
