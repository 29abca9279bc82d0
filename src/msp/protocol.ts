import { z } from 'zod';
import { zonedTimeOf } from '../util/calendar.js';
import { cutAtCodePoint } from '../util/cutAtCodePoint.js';
import { jsonEscapedLength, jsonFits } from '../util/jsonLength.js';

// Host payloads are parsed leniently: open enums are plain strings, unknown fields are kept
// (z.looseObject), and only what the bot acts on is required.

/**
 * The longest word of a resolution kept (a decision, who resolved it, the policy's result, a
 * rule's durability), in UTF-16 units. The request's own text is cut and masked at intake; these
 * go straight onto the record, the audit entry and its log line, so they are bounded here:
 * hosts send a word or two ("approved", "llmJudge"), never more than a line.
 */
export const MAX_HOST_WORD_UNITS = 200;

const HostWord = z.string().transform((word) => cutAtCodePoint(word, MAX_HOST_WORD_UNITS));

/**
 * When the host says it decided: RFC 3339, so a time with its zone. Anything else is dropped and
 * the record takes its own clock's time, as for a host that sends none.
 */
const HostTime = z.string().transform((at) => (zonedTimeOf(at) === undefined ? undefined : at));

/**
 * The longest identifier a host frame may carry, in characters of its JSON (for ids as hosts
 * send them, UTF-16 units): approval, session, turn, task, item, tool-call, command and choice
 * ids, and a choice's decision and scope. Hosts send UUIDs (36), provider call ids (`call_…`,
 * `toolu_…`, about 30) and short words (`allow_once`, `localPersistent`); 256 leaves room for
 * any id scheme seven times over. Ids are stored and sent back exactly as sent, so unlike text
 * they cannot be cut: a frame with a longer one is malformed, and is skipped like any other
 * (approvalEvents.ts). Without the bound one frame of 9 MB of ids was a record of 9 MB.
 */
export const MAX_HOST_ID_CHARS = 256;

/**
 * A requirement ref in JSON, with whatever fields a newer host adds to it: the record keeps the
 * current one and every stage's, and sends the current one back whole (§6.2).
 */
export const MAX_REQUIREMENT_REF_CHARS = 1024;

/**
 * The longest view cursor kept, in UTF-16 units. Cursors are opaque tokens of a few dozen
 * characters; each one kept is held in memory and in Redis (store/sessionMemory.ts) for every
 * followed session and read back at every start, so a host must not choose its size. A longer
 * one is not kept: the next resume is afresh, which costs only the replay the cursor would save.
 */
export const MAX_VIEW_CURSOR_CHARS = 1024;

/** Whether a cursor is small enough to keep (MAX_VIEW_CURSOR_CHARS). */
export function isKeepableCursor(viewCursor: string): boolean {
  return viewCursor.length <= MAX_VIEW_CURSOR_CHARS;
}

/**
 * An approval frame's view cursor (where the approval opened, or the event's own), held to the
 * bound of a session's (MAX_VIEW_CURSOR_CHARS): the bot reads nothing from it, but the parsed
 * frame is held (heldEvents.ts while Redis is away), so a longer one is dropped, as from a
 * session/resume, and the frame kept. Not logged: a line per frame would be a log flood the host
 * controls.
 */
const FrameViewCursor = z.string().transform((cursor) => (isKeepableCursor(cursor) ? cursor : undefined));

export const HostId = z
  .string()
  // The length first: a string of megabytes is refused without being scanned.
  .refine((id) => id.length <= MAX_HOST_ID_CHARS && jsonEscapedLength(id) <= MAX_HOST_ID_CHARS, {
    message: `an id longer than ${MAX_HOST_ID_CHARS} characters`,
  });

export const RequirementRef = z.looseObject({
  approvalId: z.string(),
  sourceIndex: z.number().int(),
});
export type RequirementRef = z.infer<typeof RequirementRef>;

// The stored shapes above (the record's schema is built from them) are lenient; what a host
// frame carries is parsed with bounded ids (the Frame… schemas), so that no path from a frame to
// a record, a card or a log line carries an id of unbounded length.

/** A requirement ref as a frame carries it: a bounded id, and small as a whole. */
export const FrameRequirementRef = RequirementRef.extend({ approvalId: HostId }).refine(
  (ref) => jsonFits(ref, MAX_REQUIREMENT_REF_CHARS),
  { message: `a requirement ref larger than ${MAX_REQUIREMENT_REF_CHARS} characters` },
);

export const ApprovalChoice = z.looseObject({
  choiceId: z.string(),
  label: z.string(),
  decision: z.string(),
  scope: z.string(),
  rulePreview: z.string().optional(),
  acceptsFeedback: z.boolean().optional(),
});
export type ApprovalChoice = z.infer<typeof ApprovalChoice>;

/** Intake keeps a choice's id, decision and scope as sent (the buttons map through them). */
const FrameChoice = ApprovalChoice.extend({ choiceId: HostId, decision: HostId, scope: HostId });

export const StageResolution = z.looseObject({
  kind: z.string(),
  diagnostic: z.string().optional(),
  argvPrefix: z.array(z.string()).optional(),
});

export const ApprovalStage = z.looseObject({
  requirementId: RequirementRef,
  position: z.number().int(),
  totalStages: z.number().int(),
  argv: z.array(z.string()),
  argvComplete: z.boolean().optional(),
  resolution: StageResolution,
  suggestedPrefix: z.looseObject({ argvPrefix: z.array(z.string()), label: z.string() }).optional(),
});
export type ApprovalStage = z.infer<typeof ApprovalStage>;

const FrameStage = ApprovalStage.extend({ requirementId: FrameRequirementRef });

export const ApprovalSubject = z.looseObject({
  kind: z.string(),
  command: z.string().optional(),
  workspaceRoot: z.string().optional(),
  stages: z.array(ApprovalStage).optional(),
  toolName: z.string().optional(),
  path: z.string().optional(),
  access: z.string().optional(),
  host: z.string().optional(),
  port: z.number().optional(),
  protocol: z.string().optional(),
  origin: z.looseObject({ kind: z.string() }).optional(),
  target: z.string().optional(),
  holder: z.unknown().optional(),
});
export type ApprovalSubject = z.infer<typeof ApprovalSubject>;

const FrameSubject = ApprovalSubject.extend({ stages: z.array(FrameStage).optional() });

export const SubagentOrigin = z.looseObject({
  childRunId: z.string().optional(),
  childSessionId: z.string().optional(),
  subagentId: z.string().optional(),
});

export const CuaCardFacts = z.looseObject({
  windowTitle: z.string().optional(),
  page: z.looseObject({ host: z.string(), hostAscii: z.string().optional() }).optional(),
  steps: z.array(z.unknown()).optional(),
  data: z.array(z.unknown()).optional(),
});
export type CuaCardFacts = z.infer<typeof CuaCardFacts>;

export const ApprovalAmendment = z.looseObject({
  durability: HostWord,
  rulePreview: z.string(),
});

/**
 * Fields of an approval frame the approval can be relayed without, each parsed on its own: a
 * value of a shape the bot does not expect is dropped (as if absent), named in the frame's
 * `unreadableFields`, and the frame kept. `reason`, `reviewerReason` and `cuaCardFacts` are in no
 * vendored schema (their shapes are read from prose docs, docs/msp-approvals.md §6.1), `decidedAt`
 * neither; `subagentOrigin` is optional there and only shown. Refusing the whole frame for one of
 * them would leave the agent waiting with no card (approvalEvents.ts). What the approval asks
 * (the subject, the choices, the ids) is never dropped: a frame without it is malformed.
 */
const REQUEST_DROPPABLE = {
  reason: z.string(),
  reviewerReason: z.string(),
  cuaCardFacts: CuaCardFacts,
  subagentOrigin: SubagentOrigin,
};
const UPDATED_DROPPABLE = { subagentOrigin: SubagentOrigin };
/**
 * Inside an update's `change`: its free-text `reason` (optional in the schema, only shown). A
 * reason the bot cannot read must not cost the update it comes with (a stage advance, a rule
 * not saved).
 */
const CHANGE_DROPPABLE = { reason: z.string() };
/**
 * `amendment` is optional in the schema: a resolution the bot cannot read the rule of is still
 * the resolution (refused, the card stayed open on an approval the host had closed). It is then
 * applied without the rule: no "Rule saved" line, and no host-held grant listed for it.
 */
const RESOLVED_DROPPABLE = { decidedAt: HostTime, amendment: ApprovalAmendment };

/** A field an approval frame carried in a shape the bot does not read, and was dropped. */
export type UnreadableField =
  | keyof typeof REQUEST_DROPPABLE
  | keyof typeof RESOLVED_DROPPABLE
  | `change.${keyof typeof CHANGE_DROPPABLE}`;

type Droppable = Record<string, z.ZodType>;
/** Droppable fields inside an object field of the frame, by the name of that field. */
type NestedDroppable = Record<string, Droppable>;
type DroppedName<D extends Droppable, N extends NestedDroppable> =
  | (keyof D & string)
  | { [P in keyof N & string]: `${P}.${keyof N[P] & string}` }[keyof N & string];
type WithDroppable<T, D extends Droppable, N extends NestedDroppable> = T & {
  [K in keyof D]?: z.output<D[K]>;
} & { [P in keyof N & keyof T]: T[P] & { [K in keyof N[P]]?: z.output<N[P][K]> } } & {
  /** Set by the bot, never taken from the host: what was dropped, for the log and the card. */
  unreadableFields?: (DroppedName<D, N> & UnreadableField)[];
};

/**
 * Reads each of `fields` of `read` on its own, dropping those that do not parse; returns
 * `unreadable` with their names (after `prefix`) added.
 */
function dropUnreadable(
  read: Record<string, unknown>,
  fields: Droppable,
  prefix: string,
  unreadable: string[] | undefined,
): string[] | undefined {
  for (const [name, schema] of Object.entries(fields)) {
    if (read[name] === undefined) continue;
    const field = schema.safeParse(read[name]);
    // Assigned, not deleted: the parsed object keeps one shape (docs/performance.md).
    read[name] = field.success ? field.data : undefined;
    if (!field.success) unreadable = [...(unreadable ?? []), `${prefix}${name}`];
  }
  return unreadable;
}

/**
 * The droppable fields of a parsed frame read one by one (REQUEST_DROPPABLE), and those of
 * `nested` inside the object fields it names (CHANGE_DROPPABLE), named `change.reason`.
 */
function readDroppable<D extends Droppable, N extends NestedDroppable = Record<never, Droppable>>(
  fields: D,
  nested?: N,
) {
  return <T extends Record<string, unknown>>(params: T): WithDroppable<T, D, N> => {
    const read = params as Record<string, unknown>;
    let unreadable = dropUnreadable(read, fields, '', undefined);
    for (const [parent, inner] of Object.entries(nested ?? {})) {
      // The frame's schema requires the parent to be an object; an optional one may be absent.
      const object = read[parent];
      if (typeof object === 'object' && object !== null && !Array.isArray(object)) {
        unreadable = dropUnreadable(object as Record<string, unknown>, inner, `${parent}.`, unreadable);
      }
    }
    // A host's own `unreadableFields` is not ours: overwritten whatever it held.
    if (unreadable !== undefined || read.unreadableFields !== undefined) read.unreadableFields = unreadable;
    return params as WithDroppable<T, D, N>;
  };
}

/**
 * Every requirement ref of an approval names that approval (§6.2, §6.7): the current one, which
 * is sent back with a decision, and each stage's, which says which stage it is. One that names
 * another approval makes the frame contradict itself, so it is malformed, not stored.
 */
function refsNameTheApproval(
  params: { approvalId: string; currentRequirementId: RequirementRef; subject: ApprovalSubject },
  ctx: z.RefinementCtx,
): void {
  const foreign = (ref: RequirementRef, path: (string | number)[]) => {
    if (ref.approvalId !== params.approvalId)
      ctx.addIssue({ code: 'custom', path, message: 'names another approval' });
  };
  foreign(params.currentRequirementId, ['currentRequirementId', 'approvalId']);
  for (const [i, stage] of (params.subject.stages ?? []).entries())
    foreign(stage.requirementId, ['subject', 'stages', i, 'requirementId', 'approvalId']);
}

/** Body of approval/request, approval/requested, approval/reviewing and listPending entries. */
export const ApprovalRequestParams = z
  .looseObject({
    sessionId: HostId,
    approvalId: HostId,
    turnId: HostId.optional(),
    taskId: HostId.optional(),
    itemId: HostId.optional(),
    toolCallId: HostId.optional(),
    toolName: z.string().default(''),
    rawArgs: z.string().default(''),
    viewCursor: FrameViewCursor.optional(),
    subject: FrameSubject,
    currentRequirementId: FrameRequirementRef,
    availableChoices: z.array(FrameChoice),
    protectedWrite: z.boolean().default(false),
    judgeEscalated: z.boolean().default(false),
    // REQUEST_DROPPABLE: subagentOrigin, reviewerReason, cuaCardFacts, reason.
  })
  .superRefine(refsNameTheApproval)
  .transform(readDroppable(REQUEST_DROPPABLE));
export type ApprovalRequestParams = z.infer<typeof ApprovalRequestParams>;

export const ApprovalChange = z.looseObject({
  kind: z.string(),
  requirementId: FrameRequirementRef.optional(),
  choiceId: HostId.optional(),
  decision: HostId.optional(),
  status: z.string().optional(),
  // CHANGE_DROPPABLE: reason.
});

export const ApprovalUpdatedParams = z
  .looseObject({
    sessionId: HostId,
    approvalId: HostId,
    availableChoices: z.array(FrameChoice),
    change: ApprovalChange,
    currentRequirementId: FrameRequirementRef,
    subject: FrameSubject,
    viewCursor: FrameViewCursor.optional(),
    // UPDATED_DROPPABLE: subagentOrigin; CHANGE_DROPPABLE in `change`: reason.
  })
  .superRefine(refsNameTheApproval)
  .transform(readDroppable(UPDATED_DROPPABLE, { change: CHANGE_DROPPABLE }));
export type ApprovalUpdatedParams = z.infer<typeof ApprovalUpdatedParams>;

export const ApprovalResolvedParams = z
  .looseObject({
    sessionId: HostId,
    approvalId: HostId,
    itemId: HostId.optional(),
    turnId: HostId.optional(),
    decision: HostWord,
    policyResult: HostWord.optional(),
    resolvedBy: HostWord,
    stageEvidence: z.array(z.unknown()).optional(),
    decidedByCommandId: HostId.optional(),
    // RESOLVED_DROPPABLE: decidedAt, amendment.
    viewCursor: FrameViewCursor.optional(),
  })
  .transform(readDroppable(RESOLVED_DROPPABLE));
export type ApprovalResolvedParams = z.infer<typeof ApprovalResolvedParams>;

/**
 * `error.data` of approvalAlreadyResolved: who won the race, when the host says. Parsed, not
 * cast: what the host put there is stored on the record and shown on the card.
 */
export const ApprovalAlreadyResolvedData = z.looseObject({
  resolution: z
    .looseObject({
      decision: HostWord.optional(),
      resolvedBy: HostWord.optional(),
    })
    .optional(),
});

export const Session = z.looseObject({
  sessionId: HostId,
  status: z.string().optional(),
  attention: z.array(z.string()).optional(),
  title: z.string().optional(),
  name: z.string().optional(),
  firstUserPrompt: z.string().optional(),
  workspaceRoot: z.string().nullable().optional(),
});
export type Session = z.infer<typeof Session>;

export const SessionStatusChangedParams = z.looseObject({
  sessionId: HostId,
  status: z.string().optional(),
  attention: z.array(z.string()).optional(),
});

export const ListPendingResult = z.looseObject({
  approvals: z.array(z.unknown()),
});

export const InitializeResult = z.looseObject({
  grantedCapabilities: z.array(z.string()).default([]),
  schema: z.looseObject({ fingerprint: z.string(), version: z.number() }).optional(),
  serverInfo: z.looseObject({ name: z.string(), version: z.string() }).optional(),
  sessionDurability: z.string().optional(),
});
export type InitializeResult = z.infer<typeof InitializeResult>;

export const DecideResult = z.looseObject({
  commandId: z.string(),
  approvalId: z.string().optional(),
  status: z.string().optional(),
  terminal: z.boolean().optional(),
});
export type DecideResult = z.infer<typeof DecideResult>;

export interface DecideParams {
  sessionId: string;
  approvalId: string;
  commandId: string;
  requirementId: RequirementRef;
  choiceId: string;
  feedback?: string;
}

/**
 * The stable-bundle fingerprints (initialize's `schema.fingerprint`) of the hosts this client was
 * checked against; another one is only a warning. The fingerprint moves with every schema step,
 * additive ones included, so the list grows with what the client is checked against: the stable
 * bundle upstream ships (test/fixtures/msp-schema/stable-manifest.json), then the hosts of the
 * recorded transcripts (test/fixtures/msp-transcripts/), whose frames all parse here.
 */
export const KNOWN_SCHEMA_FINGERPRINTS: ReadonlySet<string> = new Set([
  // schema/msp/stable/manifest.json
  'sha256:03312c213efd14277a0e0a102f70adeae497a469ca4edf7242f479953ed758b7',
  // approval-round-trip and most other transcripts
  'sha256:c8d1a2a1866814e220fd396d382a9a75861412feee884b5021b2ee359bd3dc59',
  // approval-deny-round-trip
  'sha256:3ef112c3e8a5f55163901e8d6b6ac9e2b4399dba7211f92ca30bb1623701f798',
  // snapshot-suffix-pending-*, tolerance-unknown-stream-kind
  'sha256:07e2c7da705ad60ab86d57d6d0c08bf5ebb99a53834958a4435078bc293c6c47',
]);

/** A durable host keeps approvals across restarts; anything unrecognized is treated as not durable. */
export function isDurable(sessionDurability: string | undefined): boolean {
  return sessionDurability === undefined || sessionDurability === 'durable';
}
