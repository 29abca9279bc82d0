// A request whose arguments intake cut is masked once: the hash (takeRequest.ts, argsHash) and
// "View full" (takeFullText.ts) share the one masking of the raw arguments. Counted through the
// real maskPrefix, wrapped: this file mocks a module, so it runs isolated (vitest.unit.config.ts).

import { describe, expect, it, vi } from 'vitest';
import { ApprovalRequestParams } from '../../../../src/msp/protocol.js';
import { MAX_FULL_TEXT_CHARS, MAX_RAW_ARGS_CHARS } from '../../../../src/relay/hostEvents/intake/limits.js';
import { fullTextFields } from '../../../../src/relay/hostEvents/intake/takeFullText.js';
import { newRecord, openRecord } from '../../../../src/relay/records/recordMutations.js';
import { maskPrefix } from '../../../../src/secrets/maskPrefix.js';
import { FAKE_GITHUB_TOKEN } from '../../../support/fakeSecrets.js';

vi.mock('../../../../src/secrets/maskPrefix.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../../../src/secrets/maskPrefix.js')>();
  return { ...real, maskPrefix: vi.fn(real.maskPrefix) };
});

const ID = '0198f0ac-7777-7000-8000-0000000000e1';

function params(rawArgs: string, command = 'make deploy') {
  return ApprovalRequestParams.parse({
    sessionId: 's-1',
    approvalId: ID,
    turnId: 't-1',
    itemId: 'i-1',
    toolCallId: 'call-1',
    toolName: 'bash',
    rawArgs,
    subject: {
      kind: 'shell',
      command,
      stages: [
        {
          requirementId: { approvalId: ID, sourceIndex: 0 },
          position: 1,
          totalStages: 1,
          argv: command.split(' '),
          argvComplete: true,
          resolution: { kind: 'unresolved' },
        },
      ],
    },
    currentRequirementId: { approvalId: ID, sourceIndex: 0 },
    availableChoices: [{ choiceId: 'allow_once', label: 'Allow once', decision: 'approved', scope: 'once' }],
  });
}

const ctx = {
  hostId: 'h',
  incarnation: 'inc-1',
  channel: 'C1',
  route: 'default',
  sandboxMode: 'default',
  caller: 'session:s-1',
  phase: 'pending' as const,
  now: new Date('2026-11-30T10:00:00Z'),
};

/** A 500 KB argument string, with `secret` at `at` characters in (none when undefined). */
function bigArgs(secret?: string, at = 0): string {
  const filler = 'deploy the service to staging and check the logs '.repeat(10_500);
  const text = secret === undefined ? filler : `${filler.slice(0, at)} ${secret} ${filler.slice(at)}`;
  return JSON.stringify({ command: text });
}

/** The calls that masked the whole arguments for the hash or for "View full". */
function fullMaskings(rawArgs: string): number {
  return vi
    .mocked(maskPrefix)
    .mock.calls.filter(([text, max]) => text === rawArgs && max === MAX_FULL_TEXT_CHARS).length;
}

describe('openRecord', () => {
  it('masks the arguments of a cut request once, for both the hash and "View full"', () => {
    const request = params(bigArgs(FAKE_GITHUB_TOKEN, 300_000));
    expect(request.rawArgs.length).toBeGreaterThan(500_000);
    vi.mocked(maskPrefix).mockClear();
    const { record, fullText } = openRecord(request, ctx);
    expect(record.intake?.parts.rawArgs?.truncated).toBe(true);
    expect(fullText?.xa).toBeDefined();
    expect(fullMaskings(request.rawArgs)).toBe(1);
  });

  it.each([
    ['a secret past the cut', bigArgs(FAKE_GITHUB_TOKEN, 300_000)],
    ['a secret before the cut', bigArgs(FAKE_GITHUB_TOKEN, 1_000)],
    ['a secret in the full text only', bigArgs(FAKE_GITHUB_TOKEN, MAX_RAW_ARGS_CHARS + 1_000)],
    ['no secret', bigArgs()],
    ['arguments that are not cut', JSON.stringify({ command: `echo ${FAKE_GITHUB_TOKEN}` })],
  ])('gives, for %s, byte for byte the record and full text each makes on its own', (_, rawArgs) => {
    for (const command of ['make deploy', `make ${'x'.repeat(40_000)}`]) {
      const request = params(rawArgs, command);
      const opened = openRecord(request, ctx);
      const alone = newRecord(request, ctx);
      expect(JSON.stringify(opened.record)).toBe(JSON.stringify(alone));
      const fields = fullTextFields(alone, request);
      expect(opened.fullText === undefined ? undefined : JSON.stringify(opened.fullText)).toBe(
        fields === undefined ? undefined : JSON.stringify(fields),
      );
    }
  });
});
