import { describe, expect, it } from 'vitest';
import { codeBlocks } from '../../../src/cards/escape.js';
import { FULL_VIEW_CALLBACK_ID, VIEW_FULL_ACTION_ID } from '../../../src/cards/ids.js';
import {
  checkViewLimits,
  MAX_BLOCKS_PER_VIEW,
  MAX_PRIVATE_METADATA,
  MAX_SECTION_TEXT,
  MAX_VIEW_BUTTON_TEXT,
} from '../../../src/cards/limits.js';
import { renderCard } from '../../../src/cards/renderCard.js';
import { notShownNote, renderFullView } from '../../../src/cards/renderFullView.js';
import type { FullTextOf } from '../../../src/domain/fullText.js';
import type { ApprovalRecord } from '../../../src/domain/record.js';
import type { ApprovalSubject } from '../../../src/msp/protocol.js';
import { newIntake } from '../../../src/relay/hostEvents/intake/intakeReport.js';
import { MAX_FULL_TEXT_CHARS } from '../../../src/relay/hostEvents/intake/limits.js';
import {
  fullTextFields,
  takeFullArgs,
  takeFullSubject,
} from '../../../src/relay/hostEvents/intake/takeFullText.js';
import { takeRequest } from '../../../src/relay/hostEvents/intake/takeRequest.js';
import { buttons, fileRecord, inPhase, type Json, NOW, shellRecord } from '../../support/cardFixtures.js';
import { FAKE_GITHUB_TOKEN, FAKE_SLACK_BOT_TOKEN } from '../../support/fakeSecrets.js';

const METADATA = { channel: 'C0APPROVALS', ts: '1700000000.000100', approvalId: 'appr-1' };

/** The text of the code blocks of part `p` of a full view, joined, fences taken off. */
function partText(view: { blocks: unknown[] }, p: number): string {
  return (view.blocks as unknown as Json[])
    .filter((b) => typeof b.block_id === 'string' && b.block_id.startsWith(`cs_full_${p}_`))
    .map((b) => {
      const text = (b.text as { text: string }).text;
      const code = text.slice(text.indexOf('```\n') + 4);
      return code.slice(0, code.lastIndexOf('\n```'));
    })
    .join('');
}

function sectionTexts(view: { blocks: unknown[] }): string[] {
  return (view.blocks as unknown as Json[])
    .filter((b) => b.type === 'section')
    .map((b) => (b.text as { text: string }).text);
}

function contextTexts(view: { blocks: unknown[] }): string[] {
  return (view.blocks as unknown as Json[])
    .filter((b) => b.type === 'context')
    .flatMap((b) => (b.elements as Array<{ text: string }>).map((e) => e.text));
}

function withCommand(command: string, overrides: Partial<ApprovalRecord> = {}): ApprovalRecord {
  const base = shellRecord(1);
  return { ...base, subject: { ...base.subject, command }, ...overrides };
}

describe('full view', () => {
  it('shows a 50,000-character command whole, split into sections within the modal limits', () => {
    const command = Array.from({ length: 5000 }, (_, i) => `arg${String(i).padStart(5, '0')}`)
      .join(' ')
      .padEnd(50_000, '.');
    expect(command.length).toBe(50_000);
    const view = renderFullView({ record: withCommand(command), full: {}, metadata: METADATA });

    expect(checkViewLimits(view)).toEqual([]);
    expect(partText(view, 0)).toBe(command);
    expect(sectionTexts(view)[0]!.startsWith('*Command*\n```\n')).toBe(true);
    expect(contextTexts(view).join('\n')).not.toContain('not shown');
    expect(view.callback_id).toBe(FULL_VIEW_CALLBACK_ID);
    expect(JSON.parse(view.private_metadata!)).toEqual(METADATA);
    // The card's own choices, pressable from the modal.
    const choiceIds = (view.blocks as unknown as Json[])
      .filter((b) => b.type === 'actions')
      .flatMap((b) => (b.elements as Json[]).map((e) => e.action_id));
    expect(choiceIds).toEqual(['cs_choice_0', 'cs_choice_1', 'cs_choice_2']);
  });

  it('keeps every limit for a huge input and says how many characters it left out', () => {
    const command = 'x'.repeat(1_000_000);
    const args = JSON.stringify({ command });
    const record = withCommand(command, { rawArgs: args });
    const view = renderFullView({ record, full: {}, metadata: METADATA });

    expect(checkViewLimits(view)).toEqual([]);
    expect(view.blocks.length).toBeLessThanOrEqual(MAX_BLOCKS_PER_VIEW);
    for (const text of sectionTexts(view)) expect(text.length).toBeLessThanOrEqual(MAX_SECTION_TEXT);
    expect(view.title.text.length).toBeLessThanOrEqual(MAX_VIEW_BUTTON_TEXT);
    expect(view.private_metadata!.length).toBeLessThanOrEqual(MAX_PRIVATE_METADATA);

    const shown = partText(view, 0);
    expect(command.startsWith(shown)).toBe(true);
    // Whatever was not shown is counted: the rest of the command, the stages, workspace, arguments.
    const total =
      command.length +
      '1/2  npm test\n2/2  git push'.length +
      '/srv/repo'.length +
      JSON.stringify(JSON.parse(args), null, 2).length;
    const shownElsewhere = [1, 2, 3].map((p) => partText(view, p).length).reduce((a, b) => a + b, 0);
    expect(contextTexts(view)).toContain(notShownNote(total - shown.length - shownElsewhere));
    expect(shown.length).toBeGreaterThan(200_000);
  });

  it('adds what intake kept out of the stored full text to the count', () => {
    const record = withCommand('cut', {
      intake: {
        maskedSecrets: 0,
        truncated: true,
        parts: { subject: { maskedSecrets: 0, truncated: true } },
      },
    });
    const full: FullTextOf = {
      subject: { parts: [{ label: 'Command', text: 'y'.repeat(10) }], omitted: 1234 },
    };
    const view = renderFullView({ record, full, metadata: METADATA });
    expect(partText(view, 0)).toBe('y'.repeat(10));
    expect(contextTexts(view)).toContain(notShownNote(1234));
  });

  it('escapes agent text in every section, and the sections join back to the text', () => {
    const hostile = '<!channel> @here ``` <https://evil.example|docs> & done ';
    const command = hostile.repeat(400);
    const view = renderFullView({ record: withCommand(command), full: {}, metadata: METADATA });
    const json = JSON.stringify(view.blocks);
    expect(json).not.toContain('<!channel>');
    expect(json).not.toContain('<https://evil');
    expect(json).not.toContain('@here');
    const code = partText(view, 0);
    expect(code).not.toContain('```');
    const unescaped = code
      .replaceAll('\u200B', '')
      .replaceAll('&lt;', '<')
      .replaceAll('&gt;', '>')
      .replaceAll('&amp;', '&');
    expect(unescaped).toBe(command);
  });

  it('carries no buttons once the request is decided, and no metadata it cannot fit', () => {
    const decided = renderFullView({
      record: inPhase(withCommand('x'.repeat(5000)), 'resolved'),
      full: {},
      metadata: METADATA,
    });
    expect((decided.blocks as unknown as Json[]).some((b) => b.type === 'actions')).toBe(false);

    const long = renderFullView({
      record: withCommand('x'.repeat(5000)),
      full: {},
      metadata: { ...METADATA, approvalId: 'a'.repeat(4000) },
    });
    expect(checkViewLimits(long)).toEqual([]);
    expect(long.private_metadata).toBeUndefined();
    expect((long.blocks as unknown as Json[]).some((b) => b.type === 'actions')).toBe(false);
  });

  it('codeBlocks: contiguous blocks within the limit, the rest counted in characters', () => {
    const raw = `${'ab&'.repeat(100)}😀`;
    const { blocks, omitted } = codeBlocks(raw, 58, 3);
    expect(blocks).toHaveLength(3);
    for (const b of blocks) expect(b.length).toBeLessThanOrEqual(58);
    const joined = blocks
      .map((b) => b.slice(4, -4))
      .join('')
      .replaceAll('&amp;', '&');
    expect(raw.startsWith(joined)).toBe(true);
    expect(omitted).toBe([...raw].length - joined.length);
    expect(codeBlocks('', 58, 3)).toEqual({ blocks: ['```\n \n```'], omitted: 0 });
    expect(codeBlocks('abc', 58, 0)).toEqual({ blocks: [], omitted: 3 });
  });
});

describe('full view: what runs, as the card shows it', () => {
  it('draws each stage on one line, a word holding a line break quoted', () => {
    const record = shellRecord(1);
    (record.subject.stages![0] as { argv: string[] }).argv = ['bash', '-c', 'echo hello\n2/2  git status'];
    const view = renderFullView({ record, full: {}, metadata: METADATA });
    const stages = sectionTexts(view).find((t) => t.startsWith('*Stages*'));
    expect(stages).toBeDefined();
    // No line of its own for the fake "2/2  git status".
    expect(stages).not.toMatch(/\n2\/2 {2}git status/);
    expect(stages).toContain('1/2  bash -c "echo hello\\n2/2  git status"');
  });

  it('names a Unicode host in its xn-- form too', () => {
    const record = fileRecord({
      subject: { kind: 'network', host: 'gіthub.com', port: 443, protocol: 'https' },
    });
    const view = renderFullView({ record, full: {}, metadata: METADATA });
    const all = sectionTexts(view).join('\n');
    expect(all).toContain('https://gіthub.com:443');
    expect(all).toMatch(/\*Host in ASCII\*[\s\S]*xn--gthub-n2e\.com/);
  });
});

describe('View full on the card', () => {
  const viewFull = (record: ApprovalRecord) =>
    buttons(renderCard(record, { now: NOW })).filter((b) => b.actionId === VIEW_FULL_ACTION_ID);

  it('is not on a card that shows everything', () => {
    expect(viewFull(shellRecord(1))).toEqual([]);
    expect(viewFull(fileRecord())).toEqual([]);
  });

  it('is on a card that shortened the command, a stage, a path or the arguments', () => {
    expect(viewFull(withCommand('x'.repeat(2500)))).toHaveLength(1);
    const base = shellRecord(1);
    const longStage = {
      ...base.subject,
      stages: base.subject.stages!.map((s, i) => (i === 0 ? { ...s, argv: ['echo', 'y'.repeat(600)] } : s)),
    };
    expect(viewFull({ ...base, subject: longStage })).toHaveLength(1);
    const file = fileRecord();
    expect(viewFull({ ...file, subject: { ...file.subject, path: `/srv/${'p'.repeat(600)}` } })).toHaveLength(
      1,
    );
    expect(viewFull({ ...base, rawArgs: JSON.stringify({ data: 'z'.repeat(3000) }) })).toHaveLength(1);
    const [button] = viewFull(withCommand('x'.repeat(2500)));
    expect(button).toMatchObject({ text: 'View full', value: base.approvalId });
  });

  it('is on a card whose request intake cut, also once it is decided', () => {
    const cut = shellRecord(1, {
      intake: {
        maskedSecrets: 0,
        truncated: true,
        parts: { rawArgs: { maskedSecrets: 0, truncated: true } },
      },
    });
    expect(viewFull(cut)).toHaveLength(1);
    expect(viewFull(inPhase(cut, 'resolved'))).toHaveLength(1);
  });
});

describe('full text kept at intake', () => {
  const secret = FAKE_GITHUB_TOKEN;

  function shellSubject(command: string): ApprovalSubject {
    return {
      kind: 'shell',
      command,
      stages: [
        {
          requirementId: { approvalId: 'a', sourceIndex: 0 },
          position: 1,
          totalStages: 1,
          argv: ['echo', command.slice(0, 100), `--token=${secret}`],
          resolution: { kind: 'unresolved' },
        },
      ],
    };
  }

  it('masks as intake does and keeps the whole command up to its bound', () => {
    const command = `deploy ${'a'.repeat(50_000)} --token ${secret} done`;
    const full = takeFullSubject(shellSubject(command));
    expect(full.omitted).toBe(0);
    expect(full.parts[0]).toEqual({
      label: 'Command',
      text: command.replace(secret, '[masked github-token]'),
    });
    expect(full.parts[1]!.label).toBe('Stages');
    expect(full.parts[1]!.text).toContain('--token=[masked github-token]');
    expect(JSON.stringify(full)).not.toContain(secret);
  });

  it('keeps at most what a modal can show, and counts the rest', () => {
    const command = 'b'.repeat(MAX_FULL_TEXT_CHARS + 5000);
    const full = takeFullSubject({ kind: 'shell', command });
    expect(full.parts).toEqual([{ label: 'Command', text: 'b'.repeat(MAX_FULL_TEXT_CHARS) }]);
    expect(full.omitted).toBe(5000);
    // The bound is the subject's: what the command left, the stages share; the rest is counted.
    const withStages = takeFullSubject({ ...shellSubject('c'.repeat(MAX_FULL_TEXT_CHARS - 10)) });
    expect(withStages.parts.map((p) => p.label)).toEqual(['Command', 'Stages']);
    expect(withStages.parts[1]!.text).toBe('1/1  echo ');
    // The masked word holds a space: quoted, as a stage's words are shown.
    const stageLine = `1/1  echo ${'c'.repeat(100)} "--token=[masked github-token]"`;
    expect(withStages.omitted).toBe(stageLine.length - '1/1  echo '.length);
    const args = takeFullArgs(`{"x":"${secret}"}`);
    expect(args).toEqual({
      parts: [{ label: 'Arguments', text: '{\n  "x": "[masked github-token]"\n}' }],
      omitted: 0,
    });
  });

  it('masks the keys of a cut subject of unknown kind, not only its values', () => {
    // Issue 26: keys show in "Subject as sent" as much as values do.
    const subject = {
      kind: 'futureKind',
      env: { [FAKE_SLACK_BOT_TOKEN]: 1, nested: [{ [secret]: 'value' }] },
      padding: 'p'.repeat(40_000),
    } as unknown as ApprovalSubject;
    const params = {
      approvalId: 'a',
      sessionId: 's',
      toolName: 'tool',
      rawArgs: '{}',
      subject,
      currentRequirementId: { approvalId: 'a', sourceIndex: 0 },
      availableChoices: [],
      protectedWrite: false,
      judgeEscalated: false,
    };
    const taken = takeRequest(params, undefined);
    const fields = fullTextFields({ intake: newIntake(taken.reports) }, params);
    const stored = fields!.xs!;
    expect(stored).not.toContain(FAKE_SLACK_BOT_TOKEN);
    expect(stored).not.toContain(secret);
    const shown = JSON.parse(stored).parts[0];
    expect(shown.label).toBe('Subject as sent');
    expect(shown.text).toContain('"[masked slack-token]": 1');
    expect(shown.text).toContain('"[masked github-token]": "value"');
  });

  it('is kept only for the parts intake cut: nothing for an ordinary request', () => {
    const params = {
      approvalId: 'a',
      sessionId: 's',
      toolName: 'bash',
      rawArgs: '{"command":"ls"}',
      subject: shellSubject('ls'),
      currentRequirementId: { approvalId: 'a', sourceIndex: 0 },
      availableChoices: [],
      protectedWrite: false,
      judgeEscalated: false,
    };
    const ordinary = takeRequest(params, undefined);
    expect(fullTextFields({ intake: newIntake(ordinary.reports) }, params)).toBeUndefined();

    const huge = { ...params, subject: shellSubject(`ls ${'c'.repeat(40_000)}`) };
    const cut = takeRequest(huge, undefined);
    const fields = fullTextFields({ intake: newIntake(cut.reports) }, huge);
    expect(Object.keys(fields ?? {})).toEqual(['xs']);
    expect(JSON.parse(fields!.xs!).parts[0].text).toBe(huge.subject.command);
  });
});
