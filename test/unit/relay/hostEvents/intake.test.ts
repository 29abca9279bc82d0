import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { stageCapabilities } from '../../../../src/domain/grants/capabilities.js';
import { ApprovalRecord } from '../../../../src/domain/record.js';
import {
  ApprovalRequestParams,
  ApprovalResolvedParams,
  ApprovalUpdatedParams,
  MAX_HOST_ID_CHARS,
  MAX_REQUIREMENT_REF_CHARS,
} from '../../../../src/msp/protocol.js';
import {
  MAX_RAW_ARGS_CHARS,
  MAX_RECORD_CHARS,
  MAX_SHELL_STAGES,
  MAX_SUBJECT_CHARS,
} from '../../../../src/relay/hostEvents/intake/limits.js';
import { newRecord, reopened, resolved, updated } from '../../../../src/relay/records/recordMutations.js';
import { AWS_EXAMPLE_KEY, FAKE_GITHUB_TOKEN, FAKE_SLACK_BOT_TOKEN } from '../../../support/fakeSecrets.js';

const SLACK = FAKE_SLACK_BOT_TOKEN;
const GITHUB = FAKE_GITHUB_TOKEN;
const AWS = AWS_EXAMPLE_KEY;
const BEARER = 'Authorization: Bearer 8f2a9c0d41e7b6aa';
const SECRETS = [SLACK, GITHUB, AWS, '8f2a9c0d41e7b6aa', 'hunter2'];

const ID = '0198f0ac-7777-7000-8000-0000000000e1';
const SESSION = '0198f0aa-1111-7000-8000-0000000000aa';

function stage(sourceIndex: number, argv: string[], total: number) {
  return {
    requirementId: { approvalId: ID, sourceIndex },
    position: sourceIndex + 1,
    totalStages: total,
    argv,
    argvComplete: true,
    resolution: { kind: 'unresolved' },
  };
}

const CHOICES = [
  { choiceId: 'allow_once', label: 'Allow once', decision: 'approved', scope: 'once' },
  {
    choiceId: 'allow_prefix',
    label: `Always allow: deploy --token ${SLACK}`,
    decision: 'approvedPolicyAmendment',
    scope: 'localPersistent',
    rulePreview: `deploy --token ${SLACK}`,
  },
  { choiceId: 'abort', label: 'Reject', decision: 'abort', scope: 'once', acceptsFeedback: true },
];

function params(overrides: Record<string, unknown> = {}) {
  return ApprovalRequestParams.parse({
    sessionId: SESSION,
    approvalId: ID,
    turnId: 't-1',
    itemId: 'i-1',
    toolCallId: 'call-1',
    toolName: 'bash',
    title: `Deploy with ${AWS}`,
    rawArgs: JSON.stringify({ command: `GITHUB_TOKEN=${GITHUB} ./deploy`, headers: [BEARER] }),
    reason: `needs SLACK=${SLACK}`,
    reviewerReason: 'password=hunter2 was in the script',
    subagentOrigin: { subagentId: 'sub-1' },
    cuaCardFacts: { windowTitle: `Login — ${GITHUB}`, steps: [{ text: `type ${AWS}` }] },
    subject: {
      kind: 'shell',
      command: `GITHUB_TOKEN=${GITHUB} ./deploy && curl -H '${BEARER}' x`,
      workspaceRoot: '/srv/repo',
      stages: [
        stage(0, ['env', `GITHUB_TOKEN=${GITHUB}`, './deploy'], 2),
        stage(1, ['curl', '-H', BEARER, 'x'], 2),
      ],
    },
    currentRequirementId: { approvalId: ID, sourceIndex: 0 },
    availableChoices: CHOICES,
    ...overrides,
  });
}

const ctx = (sessionTitle?: string) => ({
  hostId: 'h',
  incarnation: 'inc-1',
  channel: 'C1',
  route: 'default',
  sandboxMode: 'default',
  caller: 'session:s-1',
  phase: 'pending' as const,
  now: new Date('2026-11-30T10:00:00Z'),
  sessionTitle,
});

describe('intake: secrets never reach the record', () => {
  const record = newRecord(params(), ctx(`Rotate ${AWS}`));
  const stored = JSON.stringify(record);

  it('masks every human-visible string', () => {
    for (const secret of SECRETS) expect(stored).not.toContain(secret);
    expect(record.rawArgs).toBe(
      '{"command":"GITHUB_TOKEN=[masked github-token] ./deploy","headers":["Authorization: Bearer [masked authorization]"]}',
    );
    expect(record.subject.command).toBe(
      "GITHUB_TOKEN=[masked github-token] ./deploy && curl -H 'Authorization: Bearer [masked authorization]' x",
    );
    expect(record.subject.stages?.[0]?.argv).toEqual([
      'env',
      'GITHUB_TOKEN=[masked github-token]',
      './deploy',
    ]);
    expect(record.title).toBe('Deploy with [masked aws-access-key]');
    expect(record.reason).toBe('needs SLACK=[masked slack-token]');
    expect(record.reviewerReason).toBe('password=[masked secret-value] was in the script');
    expect(record.sessionTitle).toBe('Rotate [masked aws-access-key]');
    expect(record.cuaCardFacts?.windowTitle).toBe('Login — [masked github-token]');
    expect(record.cuaCardFacts?.steps).toEqual([{ text: 'type [masked aws-access-key]' }]);
    expect(record.availableChoices[1]?.rulePreview).toBe('deploy --token [masked slack-token]');
    // Capabilities are derived from what was stored, so they hold no secret either.
    expect(record.requiredCapabilities[0]).toBe('exec:env "GITHUB_TOKEN=[masked github-token]" ./deploy');
  });

  it('leaves every identifier the bot sends back or correlates on as sent', () => {
    const sent = params();
    expect(record.approvalId).toBe(ID);
    expect(record.sessionId).toBe(SESSION);
    expect(record.currentRequirementId).toEqual(sent.currentRequirementId);
    expect(record.subject.kind).toBe('shell');
    expect(record.subject.stages?.map((s) => s.requirementId)).toEqual(
      sent.subject.stages?.map((s) => s.requirementId),
    );
    expect(
      record.availableChoices.map(({ choiceId, decision, scope, acceptsFeedback }) => ({
        choiceId,
        decision,
        scope,
        acceptsFeedback,
      })),
    ).toEqual(
      CHOICES.map(({ choiceId, decision, scope, ...rest }) => ({
        choiceId,
        decision,
        scope,
        acceptsFeedback: 'acceptsFeedback' in rest ? rest.acceptsFeedback : undefined,
      })),
    );
    expect([record.turnId, record.itemId, record.toolCallId]).toEqual(['t-1', 'i-1', 'call-1']);
  });

  it('counts what it masked, part by part', () => {
    expect(record.intake).toEqual({
      maskedSecrets: 14,
      truncated: false,
      parts: {
        rawArgs: { maskedSecrets: 2, truncated: false },
        subject: { maskedSecrets: 4, truncated: false },
        title: { maskedSecrets: 1, truncated: false },
        reason: { maskedSecrets: 1, truncated: false },
        reviewerReason: { maskedSecrets: 1, truncated: false },
        sessionTitle: { maskedSecrets: 1, truncated: false },
        cuaCardFacts: { maskedSecrets: 2, truncated: false },
        availableChoices: { maskedSecrets: 2, truncated: false },
      },
    });
    // …and the record reads back through its schema.
    expect(ApprovalRecord.parse(JSON.parse(stored))).toEqual(record);
  });

  it('says a clean request is clean', () => {
    const clean = newRecord(
      params({
        title: 'Deploy',
        rawArgs: '{"command":"./deploy"}',
        reason: undefined,
        reviewerReason: undefined,
        cuaCardFacts: undefined,
        subject: { kind: 'shell', command: './deploy', stages: [stage(0, ['./deploy'], 1)] },
        availableChoices: [CHOICES[0], CHOICES[2]],
      }),
      ctx(),
    );
    expect(clean.intake).toEqual({ maskedSecrets: 0, truncated: false, parts: {} });
  });

  it('masks strings of unknown subject kinds, keys included, and bounds their depth', () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 20; i++) deep = { level: deep };
    const record = newRecord(
      params({
        subject: {
          kind: 'futureKind',
          nested: { list: [{ cred: `token=${SLACK}` }], [GITHUB]: true },
          deep,
          // JSON.parse makes `__proto__` an own property; it must stay data, not become a prototype.
          parsed: JSON.parse('{"__proto__": "own"}'),
        },
      }),
      ctx(),
    );
    const text = JSON.stringify(record.subject);
    expect(text).not.toContain(SLACK);
    expect(text).not.toContain(GITHUB);
    expect(record.subject.kind).toBe('futureKind');
    expect(Object.hasOwn(record.subject.parsed as object, '__proto__')).toBe(true);
    expect(text).not.toContain('bottom');
    expect(record.intake?.parts.subject).toEqual({ maskedSecrets: 2, truncated: true });
  });
});

describe('intake: the hash of the arguments', () => {
  const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

  it('is of the arguments as sent when masking hid nothing in them', () => {
    const rawArgs = JSON.stringify({ command: 'make ship' });
    const record = newRecord(params({ rawArgs }), ctx());
    expect(record.argsSha256).toBe(sha256(rawArgs));
    expect(record.argsSha256Of).toBeUndefined();
  });

  it('is of the arguments as masked when masking hid a secret: a guess of it cannot be confirmed', () => {
    const command = (password: string) => JSON.stringify({ command: `mysql -u root -p${password} prod` });
    const record = newRecord(params({ rawArgs: command('Winter2024') }), ctx());
    expect(record.rawArgs).not.toContain('Winter2024');
    expect(record.argsSha256).toBe(sha256(record.rawArgs));
    expect(record.argsSha256Of).toBe('masked');
    for (const guess of ['password', 'letmein', 'Summer2024', 'Winter2024'])
      expect(JSON.stringify(record)).not.toContain(sha256(command(guess)));
  });

  it('is of the arguments as masked when they log in with a password (`docker login -p`)', () => {
    const command = 'docker login -u bot -p Passw0rdXY registry.example.com';
    const argv = command.split(' ');
    const rawArgs = JSON.stringify({ command, argv });
    const record = newRecord(
      params({ rawArgs, subject: { kind: 'shell', command, stages: [stage(0, argv, 1)] } }),
      ctx(),
    );
    expect(JSON.stringify(record)).not.toContain('Passw0rdXY');
    expect(record.argsSha256).toBe(sha256(record.rawArgs));
    expect(record.argsSha256Of).toBe('masked');
  });

  it('is of the arguments as masked when the secret lies past the record’s cut, where View full shows it', () => {
    const rawArgs = JSON.stringify({ content: `${'x'.repeat(MAX_RAW_ARGS_CHARS)} ${SLACK}` });
    const record = newRecord(params({ rawArgs }), ctx());
    expect(record.intake?.parts.rawArgs).toMatchObject({ maskedSecrets: 0, truncated: true });
    expect(record.argsSha256).not.toBe(sha256(rawArgs));
    expect(record.argsSha256).toBe(sha256(rawArgs.replace(SLACK, '[masked slack-token]')));
    expect(record.argsSha256Of).toBe('masked');
  });
});

describe('intake: the subject kind', () => {
  it('masks an unknown kind that holds a secret (the card shows it), and keeps a known kind as sent', () => {
    const unknown = newRecord(params({ subject: { kind: GITHUB, target: 'x' } }), ctx());
    expect(unknown.subject.kind).toBe('[masked github-token]');
    expect(JSON.stringify(unknown)).not.toContain(GITHUB);
    expect(unknown.intake?.parts.subject).toEqual({ maskedSecrets: 1, truncated: false });

    const known = newRecord(params({ subject: { kind: 'process', target: 'x' } }), ctx());
    expect(known.subject.kind).toBe('process');
    expect(known.intake?.parts.subject).toBeUndefined();
  });
});

describe('intake: what one approval stores is bounded', () => {
  it('cuts a 5 MB rawArgs with a note, and the record stays small', () => {
    const rawArgs = JSON.stringify({ content: `${SLACK} ${'x'.repeat(5 * 1024 * 1024)}` });
    const record = newRecord(params({ rawArgs }), ctx());
    expect(record.rawArgs.length).toBeLessThanOrEqual(MAX_RAW_ARGS_CHARS);
    expect(record.rawArgs).toMatch(
      new RegExp(`xxx \\[… cut by Countersign: ${rawArgs.length} characters in all\\]$`),
    );
    expect(record.rawArgs).toContain('[masked slack-token]');
    expect(record.intake).toMatchObject({
      truncated: true,
      parts: { rawArgs: { maskedSecrets: 1, truncated: true } },
    });
    expect(JSON.stringify(record).length).toBeLessThan(MAX_RAW_ARGS_CHARS + 8 * 1024);
  });

  it('counts JSON escapes: quotes and control characters cannot blow up the stored size', () => {
    for (const filler of ['"', '\u0001', '\\']) {
      const record = newRecord(params({ rawArgs: filler.repeat(1_000_000) }), ctx());
      expect(JSON.stringify(record.rawArgs).length).toBeLessThanOrEqual(MAX_RAW_ARGS_CHARS + 2);
      expect(record.rawArgs).toContain('cut by Countersign: 1000000 characters in all');
    }
  });

  it('keeps the stage being decided of a 300-stage pipeline, and says how many were left out', () => {
    const stages = Array.from({ length: 300 }, (_, i) => stage(i, ['echo', `step-${i}`], 300));
    const record = newRecord(
      params({
        subject: { kind: 'shell', command: 'a long pipeline', stages },
        currentRequirementId: { approvalId: ID, sourceIndex: 250 },
      }),
      ctx(),
    );
    const kept = record.subject.stages!.map((s) => s.requirementId.sourceIndex);
    expect(kept).toHaveLength(MAX_SHELL_STAGES);
    expect(kept.at(-1)).toBe(250);
    expect(kept.slice(0, 3)).toEqual([0, 1, 2]);
    expect(record.intake).toMatchObject({ truncated: true, stagesOmitted: 300 - MAX_SHELL_STAGES });
    expect(record.intake?.parts.subject).toEqual({
      maskedSecrets: 0,
      truncated: false,
      stagesOmitted: 300 - MAX_SHELL_STAGES,
    });
  });

  it('gives the stage being decided its argv first when the subject is over budget', () => {
    const big = 'y'.repeat(15_000);
    const stages = Array.from({ length: 10 }, (_, i) => stage(i, ['run', `${i}-${big}`], 10));
    const record = newRecord(
      params({
        subject: { kind: 'shell', command: big, stages },
        currentRequirementId: { approvalId: ID, sourceIndex: 7 },
      }),
      ctx(),
    );
    expect(record.subject.stages![7]!.argv[1]).toBe(`7-${big}`);
    expect(JSON.stringify(record.subject).length).toBeLessThan(MAX_SUBJECT_CHARS + 2 * 1024);
    expect(record.intake?.parts.subject?.truncated).toBe(true);
    expect(ApprovalRecord.parse(JSON.parse(JSON.stringify(record)))).toBeTruthy();
  });

  it('stays under its bound and readable whatever every field holds', () => {
    const huge = `${SLACK} ${'z'.repeat(3_000_000)}`;
    const stages = Array.from({ length: 2_000 }, (_, i) => ({
      ...stage(
        i,
        Array.from({ length: 2_000 }, () => huge.slice(0, 2_000)),
        2_000,
      ),
      resolution: { kind: huge, diagnostic: huge, argvPrefix: [huge] },
      suggestedPrefix: { argvPrefix: [huge], label: huge },
      extra: { huge },
    }));
    const started = performance.now();
    const record = newRecord(
      params({
        toolName: huge,
        title: huge,
        rawArgs: huge,
        reason: huge,
        reviewerReason: huge,
        subagentOrigin: { subagentId: huge, extra: huge },
        cuaCardFacts: {
          windowTitle: huge,
          page: { host: huge, hostAscii: huge },
          steps: Array.from({ length: 10_000 }, () => huge),
          data: [{ kind: 'secret', value: huge }],
        },
        subject: { kind: 'shell', command: huge, workspaceRoot: huge, stages, other: [huge, { huge }] },
        currentRequirementId: { approvalId: ID, sourceIndex: 1_999 },
        availableChoices: Array.from({ length: 1_000 }, (_, i) => ({
          choiceId: `c${i}`,
          label: huge,
          decision: 'approved',
          scope: 'once',
          rulePreview: huge,
          extra: huge,
        })),
      }),
      ctx(huge),
    );
    // A sanity bound on the work, not a benchmark: nothing is scanned past a window of each field.
    expect(performance.now() - started).toBeLessThan(5_000);
    const stored = JSON.stringify(record);
    expect(stored.length).toBeLessThan(MAX_RECORD_CHARS);
    expect(stored).not.toContain(SLACK);
    expect(ApprovalRecord.parse(JSON.parse(stored))).toBeTruthy();
    expect(record.subject.stages!.at(-1)!.requirementId.sourceIndex).toBe(1_999);
    expect(record.availableChoices.map((c) => c.choiceId).slice(0, 2)).toEqual(['c0', 'c1']);
    expect(record.intake).toMatchObject({ truncated: true, stagesOmitted: 2_000 - MAX_SHELL_STAGES });
  });

  it('stays under its bound with every id as long as a frame may carry it', () => {
    // The ids are kept as sent; the frame's schema bounds them (msp/protocol.ts).
    const id = (c: string) => c.repeat(MAX_HOST_ID_CHARS);
    const approvalId = id('a');
    const huge = 'z'.repeat(3_000_000);
    const ref = (sourceIndex: number) => {
      const bare = { approvalId, sourceIndex };
      const room = MAX_REQUIREMENT_REF_CHARS - JSON.stringify(bare).length - '"n":""'.length - 1;
      return { ...bare, n: 'r'.repeat(room) };
    };
    const stages = Array.from({ length: 2_000 }, (_, i) => ({
      ...stage(i, [huge], 2_000),
      requirementId: ref(i),
    }));
    const record = newRecord(
      params({
        approvalId,
        sessionId: id('s'),
        turnId: id('t'),
        itemId: id('i'),
        toolCallId: id('c'),
        rawArgs: huge,
        subject: { kind: 'shell', command: huge, stages },
        currentRequirementId: ref(1_999),
        availableChoices: Array.from({ length: 1_000 }, (_, i) => ({
          choiceId: `${i}`.padEnd(MAX_HOST_ID_CHARS, 'c'),
          label: huge,
          decision: id('d'),
          scope: id('o'),
          rulePreview: huge,
        })),
      }),
      ctx(huge),
    );
    expect(record.currentRequirementId).toEqual(ref(1_999));
    expect(JSON.stringify(record).length).toBeLessThan(MAX_RECORD_CHARS);
  });
});

describe('intake: the flags follow what the record holds now', () => {
  const base = newRecord(params(), ctx());

  it('a redelivery of the same question changes nothing', () => {
    expect(reopened(params(), 'inc-1', 'pending')(base)).toBeUndefined();
  });

  // base counts 13: rawArgs 2, subject 4, choices 2, title, reason, reviewerReason 1 each, cua 2.
  it('recounts the subject and choices an update replaces, and keeps the other parts', () => {
    const clean = ApprovalUpdatedParams.parse({
      sessionId: SESSION,
      approvalId: ID,
      change: { kind: 'stageResolved' },
      currentRequirementId: { approvalId: ID, sourceIndex: 1 },
      availableChoices: [CHOICES[0], CHOICES[2]],
      subject: {
        kind: 'shell',
        command: './deploy',
        stages: [stage(0, ['./deploy'], 2), stage(1, ['ls'], 2)],
      },
      reviewerReason: `ignored ${AWS}`,
    });
    const next = updated(clean)(base)!;
    expect(next.intake?.parts.subject).toBeUndefined();
    expect(next.intake?.parts.availableChoices).toBeUndefined();
    expect(next.intake?.parts.rawArgs).toEqual({ maskedSecrets: 2, truncated: false });
    expect(next.intake?.maskedSecrets).toBe(13 - 4 - 2);
    expect(next.reviewerReason).toBe(base.reviewerReason);

    const dirty = ApprovalUpdatedParams.parse({
      ...clean,
      subject: { ...clean.subject, command: `x ${SLACK}` },
    });
    expect(updated(dirty)(next)?.intake?.maskedSecrets).toBe(13 - 4 - 2 + 1);
  });

  it('a re-asked question with a new reviewer reason masks and counts that reason anew', () => {
    const next = reopened(params({ reviewerReason: `now ${SLACK} and ${AWS}` }), 'inc-2', 'pending')(base)!;
    expect(next.reviewerReason).toBe('now [masked slack-token] and [masked aws-access-key]');
    expect(next.intake?.parts.reviewerReason).toEqual({ maskedSecrets: 2, truncated: false });
    expect(next.intake?.maskedSecrets).toBe(13 - 1 + 2);
    const clean = reopened(params({ reviewerReason: 'fine now' }), 'inc-2', 'pending')(base)!;
    expect(clean.intake?.parts.reviewerReason).toBeUndefined();
    expect(clean.intake?.maskedSecrets).toBe(13 - 1);
  });

  it('masks the rule a resolution saved, and counts it', () => {
    const params = ApprovalResolvedParams.parse({
      sessionId: SESSION,
      approvalId: ID,
      decision: 'approvedPolicyAmendment',
      resolvedBy: 'user',
      amendment: { durability: 'localPersistent', rulePreview: `Always allow: deploy --token ${SLACK}` },
    });
    const next = resolved(params, 'inc-1', new Date())(base)!;
    expect(next.resolution?.amendment).toEqual({
      durability: 'localPersistent',
      rulePreview: 'Always allow: deploy --token [masked slack-token]',
    });
    expect(next.intake?.parts.amendment).toEqual({ maskedSecrets: 1, truncated: false });
    expect(next.intake?.maskedSecrets).toBe(13 + 1);
  });

  it('masks why the host could not save a rule, and counts it', () => {
    const failed = ApprovalUpdatedParams.parse({
      sessionId: SESSION,
      approvalId: ID,
      change: { kind: 'policyPersistence', status: 'failed', reason: `denied writing token=${SLACK}` },
      currentRequirementId: params().currentRequirementId,
      availableChoices: CHOICES,
      subject: params().subject,
    });
    const next = updated(failed)(base)!;
    expect(next.persistence).toEqual({
      status: 'failed',
      reason: 'denied writing token=[masked slack-token]',
    });
    expect(next.intake?.parts.persistence).toEqual({ maskedSecrets: 1, truncated: false });
  });

  it('vouches for nothing on a record stored before intake existed', () => {
    const { intake: _, ...old } = base;
    const next = reopened(params(), 'inc-2', 'pending')(old)!;
    expect(next.intake).toBeUndefined();
  });
});

describe('intake: choices offered under one choiceId', () => {
  const ALLOW = CHOICES[0]!;
  const REJECT = CHOICES[2]!;
  const clashing = { ...REJECT, choiceId: ALLOW.choiceId };

  it('offers none of the choices that share an id but differ in what they do', () => {
    // The bot would reason about the first; the host may apply the other.
    const record = newRecord(params({ availableChoices: [ALLOW, REJECT, clashing] }), ctx());
    expect(record.availableChoices.map((c) => c.choiceId)).toEqual([REJECT.choiceId]);
    expect(record.intake?.parts.availableChoices).toEqual({
      maskedSecrets: 0,
      truncated: false,
      choicesWithheld: 2,
    });
    expect(ApprovalRecord.parse(JSON.parse(JSON.stringify(record)))).toEqual(record);
  });

  it('withholds a repeated id whose scope, rule or feedback differs too', () => {
    const session = { ...ALLOW, scope: 'session' };
    const rule = { ...CHOICES[1]!, rulePreview: 'deploy --anything' };
    const feedback = { ...REJECT, acceptsFeedback: false };
    for (const [first, second] of [
      [ALLOW, session],
      [CHOICES[1]!, rule],
      [REJECT, feedback],
    ] as const) {
      const record = newRecord(params({ availableChoices: [first, second] }), ctx());
      expect(record.availableChoices).toEqual([]);
      expect(record.intake?.parts.availableChoices?.choicesWithheld).toBe(2);
    }
  });

  it('keeps one of exact repeats, whatever their labels, and says nothing', () => {
    const again = { ...ALLOW, label: 'Allow this once' };
    const record = newRecord(params({ availableChoices: [ALLOW, REJECT, ALLOW, again] }), ctx());
    expect(record.availableChoices).toEqual([ALLOW, REJECT]);
    expect(record.intake?.parts.availableChoices).toBeUndefined();
  });

  it('looks at the whole menu, and an update with a clean menu clears the note', () => {
    const many = Array.from({ length: 1_000 }, (_, i) => ({ ...ALLOW, choiceId: `c${i}` }));
    const record = newRecord(params({ availableChoices: [...many, { ...REJECT, choiceId: 'c5' }] }), ctx());
    // The repeat comes past the choices kept, but a press on the kept c5 would name it too.
    expect(record.availableChoices.map((c) => c.choiceId).slice(4, 6)).toEqual(['c4', 'c6']);
    expect(record.intake?.parts.availableChoices?.choicesWithheld).toBe(2);

    const clean = ApprovalUpdatedParams.parse({
      sessionId: SESSION,
      approvalId: ID,
      change: { kind: 'stageResolved' },
      currentRequirementId: { approvalId: ID, sourceIndex: 1 },
      availableChoices: [ALLOW, REJECT],
      subject: record.subject,
    });
    const next = updated(clean)(record)!;
    expect(next.availableChoices).toEqual([ALLOW, REJECT]);
    expect(next.intake?.parts.availableChoices).toBeUndefined();
  });
});

describe('intake: a field the frame carried in a shape the bot does not read', () => {
  // A request a grant could answer: nothing masked or cut, no computer-use data.
  const grantable = (overrides: Record<string, unknown> = {}) =>
    params({
      title: 'Write the config',
      rawArgs: '{"path":"/srv/a"}',
      reason: 'to fix the build',
      reviewerReason: 'the judge was unsure',
      subagentOrigin: { subagentId: 'sub-1' },
      cuaCardFacts: { windowTitle: 'Editor' },
      subject: { kind: 'fileAccess', access: 'write', path: '/srv/a' },
      availableChoices: [CHOICES[0], CHOICES[2]],
      ...overrides,
    });

  it('starts from a request a grant may answer', () => {
    expect(stageCapabilities(newRecord(grantable(), ctx()))).toEqual({ capabilities: ['file-write:/srv/a'] });
  });

  it.each([
    ['reason', { text: 'x' }],
    ['reviewerReason', 42],
    ['cuaCardFacts', 'x'],
    ['cuaCardFacts', { data: 'x' }],
    ['subagentOrigin', 'x'],
  ])('a record without %s, which says so and which no grant may answer', (field, value) => {
    const record = newRecord(grantable({ [field]: value }), ctx());
    expect(record[field as keyof ApprovalRecord]).toBeUndefined();
    expect(record.intake?.parts[field]).toEqual({ maskedSecrets: 0, truncated: false, unreadable: true });
    // Computer-use data (which no grant may answer) could have been in what was dropped.
    expect(stageCapabilities(record)).toEqual({
      capabilities: ['file-write:/srv/a'],
      notGrantable: 'part of the request could not be read',
    });
    // As stored and read back.
    const stored = ApprovalRecord.parse(JSON.parse(JSON.stringify(record)));
    expect(stored.intake?.parts[field]?.unreadable).toBe(true);
  });

  it('a re-asked question whose facts can be read again clears the mark; one without them keeps it', () => {
    const base = newRecord(grantable({ cuaCardFacts: 'x' }), ctx());
    const without = reopened(grantable({ cuaCardFacts: undefined }), 'inc-2', 'pending')(base)!;
    expect(without.intake?.parts.cuaCardFacts?.unreadable).toBe(true);
    const readable = reopened(grantable(), 'inc-2', 'pending')(base)!;
    expect(readable.cuaCardFacts).toEqual({ windowTitle: 'Editor' });
    expect(readable.intake?.parts.cuaCardFacts).toBeUndefined();
    expect(stageCapabilities(readable).notGrantable).toBeUndefined();
  });
});
