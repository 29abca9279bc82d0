import { createHash } from 'node:crypto';
import type {
  ApprovalChoice,
  ApprovalRequestParams,
  ApprovalSubject,
  CuaCardFacts,
  RequirementRef,
  UnreadableField,
} from '../../../msp/protocol.js';
import { type MaskedPrefix, maskPrefix } from '../../../secrets/maskPrefix.js';
import type { PartReports } from './intakeReport.js';
import {
  MAX_CHOICE_TEXT_CHARS,
  MAX_FULL_TEXT_CHARS,
  MAX_RAW_ARGS_CHARS,
  MAX_SUBAGENT_ORIGIN_CHARS,
  MAX_TEXT_CHARS,
  MAX_TOOL_CHARS,
} from './limits.js';
import { type FieldTaker, PartIntake, type PartReport } from './partIntake.js';
import { takeChoices } from './takeChoices.js';
import { takeCuaFacts } from './takeCuaFacts.js';
import { takeSubject } from './takeSubject.js';

// Intake: the one step every host payload passes before it becomes (part of) an approval record.
// Secrets are masked here, not when a card is drawn, so that the record in Redis never holds one
// either; sizes are bounded here, so every later update and render works on a small record.

type SubagentOrigin = NonNullable<ApprovalRequestParams['subagentOrigin']>;

function takeText(raw: string, maxChars: number): { text: string; report: PartReport } {
  const part = new PartIntake(maxChars + 2);
  return { text: part.text(raw, maxChars), report: part.report() };
}

/** What is said of a field parsing dropped (UnreadableField): it is not on the record. */
const UNREAD: PartReport = { maskedSecrets: 0, truncated: false, unreadable: true };

/** Reports each field in `names` that parsing dropped from the params as unread. */
function reportUnread(
  reports: PartReports,
  unreadable: readonly UnreadableField[] | undefined,
  names: readonly (keyof PartReports & UnreadableField)[],
): void {
  if (unreadable === undefined) return;
  for (const name of names) if (unreadable.includes(name)) reports[name] = { ...UNREAD };
}

function takeSubagentOrigin(origin: SubagentOrigin): { subagentOrigin: SubagentOrigin; report: PartReport } {
  const part = new PartIntake(MAX_SUBAGENT_ORIGIN_CHARS);
  const text: FieldTaker = (value) => part.text(value as string, MAX_SUBAGENT_ORIGIN_CHARS);
  const subagentOrigin = part.shaped(origin, { subagentId: text, childSessionId: text, childRunId: text });
  return { subagentOrigin, report: part.report() };
}

/** What an update may replace: the question being asked now. */
export interface QuestionParams {
  subject: ApprovalSubject;
  currentRequirementId: RequirementRef;
  availableChoices: ApprovalChoice[];
  reviewerReason?: string;
  cuaCardFacts?: CuaCardFacts;
  /** Fields parsing dropped for their shape (ApprovalRequestParams.unreadableFields). */
  unreadableFields?: readonly UnreadableField[] | undefined;
}

export interface TakenQuestion {
  subject: ApprovalSubject;
  availableChoices: ApprovalChoice[];
  reviewerReason?: string;
  cuaCardFacts?: CuaCardFacts;
  /** One report for each part taken; a part absent from the params has none. */
  reports: PartReports;
}

export function takeQuestion(params: QuestionParams): TakenQuestion {
  const subject = takeSubject(params.subject, params.currentRequirementId.sourceIndex);
  const choices = takeChoices(params.availableChoices);
  const taken: TakenQuestion = {
    subject: subject.subject,
    availableChoices: choices.availableChoices,
    reports: { subject: subject.report, availableChoices: choices.report },
  };
  if (params.reviewerReason !== undefined) {
    const reviewerReason = takeText(params.reviewerReason, MAX_TEXT_CHARS);
    taken.reviewerReason = reviewerReason.text;
    taken.reports.reviewerReason = reviewerReason.report;
  }
  if (params.cuaCardFacts !== undefined) {
    const facts = takeCuaFacts(params.cuaCardFacts);
    taken.cuaCardFacts = facts.cuaCardFacts;
    taken.reports.cuaCardFacts = facts.report;
  }
  reportUnread(taken.reports, params.unreadableFields, ['reviewerReason', 'cuaCardFacts']);
  return taken;
}

export interface TakenRequest extends TakenQuestion {
  tool: string;
  title?: string;
  rawArgs: string;
  /**
   * SHA-256 (hex) of the arguments as sent when masking hid nothing in them; of the arguments as
   * masked (argsSha256Of `masked`) when it did.
   */
  argsSha256: string;
  argsSha256Of?: 'masked';
  /**
   * When intake cut the arguments: all of them masked as "View full" keeps them (at most
   * MAX_FULL_TEXT_CHARS), masked once for the hash and handed on to takeFullArgs, which would
   * otherwise mask up to 256 KB again. Never part of the record.
   */
  maskedArgs?: MaskedPrefix;
  reason?: string;
  subagentOrigin?: SubagentOrigin;
  sessionTitle?: string;
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/**
 * The hash the record and the audit trail keep of the arguments. Of the arguments as the host sent
 * them (UTF-8), so that a SIEM can match the audit line to the host's own log, but only when
 * masking hid nothing in them. When it hid a secret, the card (and "View full") show everything
 * else: a hash of what was sent would let anyone who reads the trail try guesses for the secret
 * offline, one hash each. Then the hash is of the arguments as masked, as they are shown.
 * `kept`: the record's arguments (masked, maybe cut); `report`: what taking them did.
 */
function argsHash(
  raw: string,
  kept: string,
  report: PartReport,
): Pick<TakenRequest, 'argsSha256' | 'argsSha256Of' | 'maskedArgs'> {
  if (!report.truncated) {
    if (report.maskedSecrets === 0) return { argsSha256: sha256(raw) };
    return { argsSha256: sha256(kept), argsSha256Of: 'masked' };
  }
  // Cut: what can be shown is the text "View full" keeps, masked here once for both.
  const maskedArgs = maskPrefix(raw, MAX_FULL_TEXT_CHARS);
  if (maskedArgs.count === 0 && report.maskedSecrets === 0) return { argsSha256: sha256(raw), maskedArgs };
  return { argsSha256: sha256(maskedArgs.text), argsSha256Of: 'masked', maskedArgs };
}

/** A request's arguments as a record keeps them (masked, bounded), with their hash. */
export interface TakenArgs
  extends Pick<TakenRequest, 'rawArgs' | 'argsSha256' | 'argsSha256Of' | 'maskedArgs'> {
  report: PartReport;
}

/** The arguments of a request, taken as takeRequest takes them; for one asked again too. */
export function takeArgs(raw: string): TakenArgs {
  const fitted = takeText(raw, MAX_RAW_ARGS_CHARS);
  return { rawArgs: fitted.text, report: fitted.report, ...argsHash(raw, fitted.text, fitted.report) };
}

/** SHA-256 (hex) of the arguments as sent: what a record's argsSha256 is when masking hid nothing. */
export function argsSha256AsSent(raw: string): string {
  return sha256(raw);
}

/** A tool's name as a record keeps it (takeRequest): to compare a request asked again with it. */
export function takeTool(raw: string): string {
  return takeText(raw, MAX_TOOL_CHARS).text;
}

/**
 * Everything a new record takes from an approval request (and the session's title, which the
 * card shows), masked and bounded. Identifiers are not touched: the record keeps them from the
 * params as they are.
 */
export function takeRequest(
  params: ApprovalRequestParams,
  sessionTitle: string | undefined,
  sessionTitleIntake?: PartReport,
): TakenRequest {
  // takeQuestion's object, grown: `{ ...question, tool }` would make V8 build new hidden classes
  // for every request (docs/performance.md, "Object shapes").
  const taken: TakenRequest = Object.assign(takeQuestion(params), { tool: '', rawArgs: '', argsSha256: '' });
  const text = (name: 'tool' | 'title' | 'rawArgs' | 'reason' | 'sessionTitle', raw: string, max: number) => {
    const fitted = takeText(raw, max);
    taken.reports[name] = fitted.report;
    return fitted.text;
  };
  taken.tool = text('tool', params.toolName, MAX_TOOL_CHARS);
  const args = takeArgs(params.rawArgs);
  taken.rawArgs = args.rawArgs;
  taken.reports.rawArgs = args.report;
  taken.argsSha256 = args.argsSha256;
  if (args.argsSha256Of) taken.argsSha256Of = args.argsSha256Of;
  if (args.maskedArgs) taken.maskedArgs = args.maskedArgs;
  if (typeof params.title === 'string') taken.title = text('title', params.title, MAX_TEXT_CHARS);
  if (params.reason !== undefined) taken.reason = text('reason', params.reason, MAX_TEXT_CHARS);
  if (sessionTitle !== undefined) {
    taken.sessionTitle = text('sessionTitle', sessionTitle, MAX_TEXT_CHARS);
    // Taken in once already, when the host said it: what was masked or cut then counts too.
    const now = taken.reports.sessionTitle!;
    if (sessionTitleIntake) {
      taken.reports.sessionTitle = {
        maskedSecrets: now.maskedSecrets + sessionTitleIntake.maskedSecrets,
        truncated: now.truncated || sessionTitleIntake.truncated,
      };
    }
  }
  if (params.subagentOrigin !== undefined) {
    const origin = takeSubagentOrigin(params.subagentOrigin);
    taken.subagentOrigin = origin.subagentOrigin;
    taken.reports.subagentOrigin = origin.report;
  }
  reportUnread(taken.reports, params.unreadableFields, ['reason', 'subagentOrigin']);
  return taken;
}

/**
 * A note the host adds later and the card shows: the rule a resolution saved
 * (`amendment.rulePreview`), why saving it failed (`policyPersistence` reason).
 */
export function takeNote(note: string): { text: string; report: PartReport } {
  return takeText(note, MAX_CHOICE_TEXT_CHARS);
}
