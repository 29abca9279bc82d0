// What the person whose decision did not go through is told (refusalFor): every outcome the
// Decider, the warrant and the checks can end in has its refusal, and only the person's own.

import { describe, expect, it } from 'vitest';
import type { ApprovalRecord } from '../../../../src/domain/record.js';
import { refusalFor } from '../../../../src/relay/deciding/refusals.js';
import { sampleRecord } from '../../../support/sampleRecord.js';

const resolved = (overrides: Partial<ApprovalRecord>): ApprovalRecord => ({
  ...sampleRecord('r-1'),
  ...overrides,
});

describe('refusalFor', () => {
  it('says how a final record ended: superseded, orphaned, or who decided what', () => {
    expect(refusalFor({ kind: 'final', record: resolved({ phase: 'superseded' }) }, 'U1')).toEqual({
      code: 'superseded',
    });
    expect(refusalFor({ kind: 'final', record: resolved({ phase: 'orphaned' }) }, 'U1')).toEqual({
      code: 'orphaned',
    });
    const decided = resolved({
      phase: 'resolved',
      resolution: {
        decision: 'approved',
        resolvedBy: 'user',
        slackUserId: 'U2',
        decidedAt: '2026-12-01T10:00:00Z',
      },
    });
    expect(refusalFor({ kind: 'final', record: decided }, 'U1')).toEqual({
      code: 'alreadyResolved',
      decision: 'approved',
      resolvedBy: 'user',
      slackUserId: 'U2',
    });
    expect(refusalFor({ kind: 'final', record: resolved({ phase: 'resolved' }) }, 'U1')).toEqual({
      code: 'alreadyResolved',
      decision: 'unknown',
      resolvedBy: 'unknown',
    });
    expect(refusalFor({ kind: 'alreadyResolved', decision: 'abort', resolvedBy: 'host' }, 'U1')).toEqual({
      code: 'alreadyResolved',
      decision: 'abort',
      resolvedBy: 'host',
    });
  });

  it('tells whoever is deciding already whether it is them, alone or among the voters', () => {
    const holder = (extra: object) =>
      ({
        sourceIndex: 0,
        choiceId: 'allow_once',
        commandId: 'c',
        claimedAt: '',
        via: 'click',
        ...extra,
      }) as never;
    expect(refusalFor({ kind: 'alreadyBeingDecided', holder: holder({ userId: 'U1' }) }, 'U1')).toEqual({
      code: 'alreadyBeingDecided',
      userId: 'U1',
      self: true,
    });
    expect(
      refusalFor(
        { kind: 'alreadyBeingDecided', holder: holder({ userId: 'U2', voters: ['U1', 'U2'] }) },
        'U1',
      ),
    ).toEqual({ code: 'alreadyBeingDecided', userId: 'U2', self: true });
    expect(refusalFor({ kind: 'alreadyBeingDecided', holder: holder({ userId: 'U2' }) }, 'U1')).toEqual({
      code: 'alreadyBeingDecided',
      userId: 'U2',
      self: false,
    });
    expect(refusalFor({ kind: 'alreadyBeingDecided' }, 'U1')).toEqual({
      code: 'alreadyBeingDecided',
      self: false,
    });
  });

  it('says the question changed, whatever changed it, and never names a grant or a timeout', () => {
    for (const kind of ['stale', 'changed', 'askedOtherwise'] as const) {
      expect(refusalFor({ kind }, 'U1')).toEqual({ code: 'questionChanged' });
    }
    // The host named a later stage, whose choices are being read again.
    expect(refusalFor({ kind: 'unavailable', reason: 'stageMoved' }, 'U1')).toEqual({
      code: 'questionChanged',
    });
    expect(refusalFor({ kind: 'unwarranted', via: 'grant' }, 'U1')).toEqual({ code: 'questionChanged' });
    expect(refusalFor({ kind: 'unwarranted', via: 'timeout' }, 'U1')).toEqual({ code: 'questionChanged' });
  });

  it('gives every other outcome its own refusal', () => {
    const cases: Array<[Parameters<typeof refusalFor>[0], unknown]> = [
      [{ kind: 'underReview' }, { code: 'underReview' }],
      [{ kind: 'unavailable', reason: 'heldElsewhere' }, { code: 'sessionElsewhere' }],
      [{ kind: 'unavailable', reason: 'unknownToHost' }, { code: 'unknownToHost' }],
      [{ kind: 'unavailable', reason: 'alreadyTerminal' }, { code: 'settledByHost' }],
      [{ kind: 'unavailable', reason: 'resolving' }, { code: 'settledByHost' }],
      [{ kind: 'gone' }, { code: 'unknownCard' }],
      [{ kind: 'reviewerUnavailable' }, { code: 'reviewerUnavailable' }],
      [{ kind: 'hostUnavailable' }, { code: 'hostUnavailable' }],
      [
        { kind: 'hostUnavailable', why: 'stopping' },
        { code: 'hostUnavailable', why: 'stopping' },
      ],
      [{ kind: 'sessionElsewhere' }, { code: 'sessionElsewhere' }],
      [{ kind: 'unknownToHost' }, { code: 'unknownToHost' }],
      [{ kind: 'notRecorded' }, { code: 'notRecorded' }],
      [{ kind: 'forwarded' }, { code: 'forwarded' }],
      [{ kind: 'stopping' }, { code: 'stopping' }],
      [
        { kind: 'refused', errorKind: 'internal' },
        { code: 'decideFailed', kind: 'internal' },
      ],
      [
        { kind: 'quorumNotMet', votes: 1, quorum: 2 },
        { code: 'quorumNotMet', votes: 1, quorum: 2 },
      ],
    ];
    for (const [outcome, refusal] of cases) expect(refusalFor(outcome, 'U1')).toEqual(refusal);
    const refused = { allowed: false, why: 'notApprover', route: 'ops' } as never;
    expect(refusalFor({ kind: 'notAuthorized', refused }, 'U1')).toEqual({ code: 'notAuthorized', refused });
    const confirmation = { target: { text: 'main', source: 'shell' }, risk: 'push' } as never;
    expect(refusalFor({ kind: 'unconfirmed', confirmation }, 'U1')).toEqual({
      code: 'confirmationMismatch',
      confirmation,
    });
    expect(refusalFor({ kind: 'reasonMissing', route: 'ops', quickReasons: true }, 'U1')).toEqual({
      code: 'reasonRequired',
      route: 'ops',
      quickReasons: true,
    });
  });
});
