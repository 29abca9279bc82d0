// The word a typed confirmation asks for (routing/confirmTarget.ts, relay/deciding/
// typedConfirmation.ts): the host of a network request, the last path segment of a file, the last
// operand of the program a shell stage runs past its wrappers; the tool's name when none can be
// derived; never asked for a rejection.

import { describe, expect, it } from 'vitest';
import { targetName } from '../../../src/cards/renderUserMessages.js';
import type { ApprovalRecord } from '../../../src/domain/record.js';
import { confirmsTarget } from '../../../src/domain/typedConfirmation.js';
import { typedConfirmationFor } from '../../../src/relay/deciding/typedConfirmation.js';
import { confirmTarget } from '../../../src/routing/confirmTarget.js';

const stage = (argv: string[], sourceIndex = 0) => ({
  requirementId: { approvalId: 'a', sourceIndex },
  position: sourceIndex + 1,
  totalStages: 1,
  argv,
  resolution: { kind: 'unresolved' },
});

const shell = (...argvs: string[][]) => ({ kind: 'shell', stages: argvs.map((argv, i) => stage(argv, i)) });

describe('confirmTarget', () => {
  it.each([
    [['git', 'push', 'origin', 'main'], 'main'],
    [['git', 'push', '--force', 'origin', 'main'], 'main'],
    [['git', 'push', 'origin', 'main', '--force'], 'main'],
    [['sudo', '-u', 'deploy', 'git', 'push', '-f', 'origin', 'release/2.0'], 'release/2.0'],
    [['sh', '-c', 'git push origin +main'], '+main'],
    [['kubectl', 'delete', 'namespace', 'prod'], 'prod'],
    [['rm', '-rf', '--', '-weird'], '-weird'],
    [['git', 'push', '-f'], 'push'],
    [['rm', '-rf', '/srv/app'], '/srv/app'],
    // A last word right after an option may be its value: the words from the last sure operand.
    [['kubectl', 'delete', 'namespace', 'prod', '-n', 'staging'], 'prod -n staging'],
    [['git', 'push', 'origin', 'main', '-o', 'staging'], 'main -o staging'],
    [['git', 'push', '--push-option', 'staging', 'origin', 'main'], 'main'],
    [['sh', '-c', 'git push origin main 2>/dev/null'], 'main'],
  ])('a shell stage %j asks for %s', (argv, target) => {
    expect(confirmTarget(shell(argv), 0)).toEqual({ text: target, source: 'argument' });
  });

  it('a program without operands asks for its name', () => {
    expect(confirmTarget(shell(['/sbin/reboot']), 0)).toEqual({ text: 'reboot', source: 'program' });
  });

  it('reads the stage asked about, and a command text past its setup', () => {
    expect(confirmTarget(shell(['make', 'build'], ['git', 'push', '-f', 'origin', 'main']), 1)?.text).toBe(
      'main',
    );
    const text = { kind: 'shell', command: 'cd /srv/app && git push --force origin main' };
    expect(confirmTarget(text, 0)?.text).toBe('main');
  });

  it('a host, and the last segment of a path', () => {
    expect(confirmTarget({ kind: 'network', host: 'db.prod.example.com', port: 5432 }, 0)).toEqual({
      text: 'db.prod.example.com',
      source: 'host',
    });
    expect(confirmTarget({ kind: 'fileAccess', path: '/srv/app/.env' }, 0)).toEqual({
      text: '.env',
      source: 'file',
    });
    expect(confirmTarget({ kind: 'fileAccess', path: '/etc/app/' }, 0)?.text).toBe('app');
  });

  it('nothing when the target is a substitution the card shows only as written', () => {
    // The splitter keeps `$(…)` as a stand-in word: it is not on the card, and what it stands
    // for is not known, so the approver types the tool's name instead (the caller's fallback).
    const text = (command: string) => confirmTarget({ kind: 'shell', command }, 0);
    expect(text('git push origin $(git branch --show-current) --force')).toBeUndefined();
    expect(text('git push --force origin $(git branch --show-current)')).toBeUndefined();
    expect(text('rm -rf <(ls)')).toBeUndefined();
    // One that is not the target leaves the target as it is.
    expect(text('git push $(git remote) main --force')?.text).toBe('main');
  });

  it('nothing when it cannot be read', () => {
    expect(confirmTarget({ kind: 'shell', command: 'git push origin ${' }, 0)).toBeUndefined();
    expect(confirmTarget({ kind: 'computerUse' }, 0)).toBeUndefined();
  });
});

describe('typedConfirmationFor', () => {
  const record = (subject: Record<string, unknown>, confirm = true) =>
    ({
      tool: 'bash',
      subject,
      currentRequirementId: { approvalId: 'a', sourceIndex: 0 },
      risks: [{ name: 'force-push', warning: 'Rewrites history', ...(confirm ? { confirm: 'type' } : {}) }],
    }) as unknown as ApprovalRecord;

  it('asks on approving and unknown words, never on a rejection', () => {
    const r = record(shell(['git', 'push', '-f', 'origin', 'main']));
    for (const decision of ['approved', 'approvedPolicyAmendment', 'somethingNew']) {
      expect(typedConfirmationFor(r, { decision })).toEqual({
        target: { text: 'main', source: 'argument' },
        risks: [{ name: 'force-push', warning: 'Rewrites history' }],
      });
    }
    for (const decision of ['abort', 'denied', 'deniedWithFeedback']) {
      expect(typedConfirmationFor(r, { decision })).toBeUndefined();
    }
  });

  it('asks nothing without a confirm rule', () => {
    expect(
      typedConfirmationFor(record(shell(['git', 'push']), false), { decision: 'approved' }),
    ).toBeUndefined();
  });

  it('falls back to the tool name, never to nothing', () => {
    expect(typedConfirmationFor(record({ kind: 'computerUse' }), { decision: 'approved' })?.target).toEqual({
      text: 'bash',
      source: 'tool',
    });
  });

  it('asks for the end of a target too long to type, never less than for a short one', () => {
    const long = `https://example.com/${'x'.repeat(200)}`;
    expect(typedConfirmationFor(record(shell(['curl', long])), { decision: 'approved' })?.target).toEqual({
      text: 'x'.repeat(100),
      source: 'argument',
      end: true,
    });
    const host = `${'a'.repeat(105)}.exfil.example.com`;
    const network = { kind: 'network', host, port: 443, protocol: 'https' };
    expect(typedConfirmationFor(record(network), { decision: 'approved' })?.target).toEqual({
      text: 'exfil.example.com',
      source: 'host',
      end: true,
    });
    // The modal says it is the end that is asked for.
    expect(targetName({ target: { text: 'exfil.example.com', source: 'host', end: true }, risks: [] })).toBe(
      'the end of the host',
    );
  });

  it('asks for the end of a long target from a whole character, never half an emoji', () => {
    const long = `😀${'x'.repeat(99)}`;
    expect(typedConfirmationFor(record(shell(['rm', long])), { decision: 'approved' })?.target).toEqual({
      text: 'x'.repeat(99),
      source: 'argument',
      end: true,
    });
  });

  it('asks for a target without the spaces around it, and a tool name across lines by its last line', () => {
    for (const operand of ['main ', 'main\u00a0', '\tmain']) {
      const target = typedConfirmationFor(record(shell(['git', 'push', '-f', 'origin', operand])), {
        decision: 'approved',
      })?.target;
      expect(target, JSON.stringify(operand)).toEqual({ text: 'main', source: 'argument' });
      expect(confirmsTarget(operand, target!)).toBe(true);
    }
    const tangled = { ...record({ kind: 'computerUse' }), tool: 'deploy\nnow' } as ApprovalRecord;
    const target = typedConfirmationFor(tangled, { decision: 'approved' })?.target;
    expect(target).toEqual({ text: 'now', source: 'tool', end: true });
    expect(confirmsTarget('now', target!)).toBe(true);
    const blank = { ...record({ kind: ' ' }), tool: ' ' } as ApprovalRecord;
    expect(typedConfirmationFor(blank, { decision: 'approved' })?.target).toEqual({
      text: 'approve',
      source: 'tool',
    });
  });

  it('asks for the tool’s name when the target holds a character the card shows as a marker', () => {
    for (const operand of ['\u202Eniam', 'ma\u200Bin', 'ma\tin', 'main\u2066x\u2069', 'ma\u0085in']) {
      const target = typedConfirmationFor(record(shell(['git', 'push', '-f', 'origin', operand])), {
        decision: 'approved',
      })?.target;
      expect(target, JSON.stringify(operand)).toEqual({ text: 'bash', source: 'tool' });
    }
    const rlo = { ...record({ kind: 'computerUse' }), tool: 'ba\u202Esh' } as ApprovalRecord;
    expect(typedConfirmationFor(rlo, { decision: 'approved' })?.target).toEqual({
      text: 'approve',
      source: 'tool',
    });
  });

  it('takes a target pasted from the modal, with the zero-width spaces the modal adds', () => {
    // codeBlock() defuses `@channel` and breaks up backticks with U+200B; a copy brings them.
    expect(confirmsTarget('@\u200Bchannel', { text: '@channel', source: 'argument' })).toBe(true);
    expect(confirmsTarget('a`\u200B`b', { text: 'a``b', source: 'argument' })).toBe(true);
    expect(confirmsTarget('ma\u200Cin', { text: 'main', source: 'argument' })).toBe(false);
  });

  it('compares the text as typed, but for spaces around it; hosts in any case', () => {
    expect(confirmsTarget(' main ', { text: 'main', source: 'argument' })).toBe(true);
    expect(confirmsTarget('Main', { text: 'main', source: 'argument' })).toBe(false);
    expect(confirmsTarget('', { text: 'main', source: 'argument' })).toBe(false);
    expect(confirmsTarget(undefined, { text: 'main', source: 'argument' })).toBe(false);
    expect(confirmsTarget('DB.prod.example.com', { text: 'db.prod.example.com', source: 'host' })).toBe(true);
  });
});
