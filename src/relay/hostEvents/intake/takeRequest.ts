import { createHash } from 'node:crypto';
import type {
  ApprovalChoice,
  ApprovalRequestParams,
  ApprovalSubject,
  CuaCardFacts,
  RequirementRef,
} from '../../../msp/protocol.js';
import type { PartReports } from './intakeReport.js';
import {
  MAX_CHOICE_TEXT_CHARS,
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
  return taken;
}

export interface TakenRequest extends TakenQuestion {
  tool: string;
  title?: string;
  rawArgs: string;
  /** SHA-256 (hex) of the arguments as sent, taken before they are masked or cut. */
  argsSha256: string;
  reason?: string;
  subagentOrigin?: SubagentOrigin;
  sessionTitle?: string;
}

/**
 * Everything a new record takes from an approval request (and the session's title, which the
 * card shows), masked and bounded. Identifiers are not touched: the record keeps them from the
 * params as they are.
 */
export function takeRequest(params: ApprovalRequestParams, sessionTitle: string | undefined): TakenRequest {
  // takeQuestion's object, grown: `{ ...question, tool }` would make V8 build new hidden classes
  // for every request (docs/performance.md, "Object shapes").
  const taken: TakenRequest = Object.assign(takeQuestion(params), { tool: '', rawArgs: '', argsSha256: '' });
  const text = (name: 'tool' | 'title' | 'rawArgs' | 'reason' | 'sessionTitle', raw: string, max: number) => {
    const fitted = takeText(raw, max);
    taken.reports[name] = fitted.report;
    return fitted.text;
  };
  taken.tool = text('tool', params.toolName, MAX_TOOL_CHARS);
  taken.rawArgs = text('rawArgs', params.rawArgs, MAX_RAW_ARGS_CHARS);
  // Of the arguments as the host sent them (UTF-8), so that a SIEM can match the audit line to
  // the host's own log; the record keeps them masked, which no one else could hash alike.
  taken.argsSha256 = createHash('sha256').update(params.rawArgs, 'utf8').digest('hex');
  if (typeof params.title === 'string') taken.title = text('title', params.title, MAX_TEXT_CHARS);
  if (params.reason !== undefined) taken.reason = text('reason', params.reason, MAX_TEXT_CHARS);
  if (sessionTitle !== undefined) taken.sessionTitle = text('sessionTitle', sessionTitle, MAX_TEXT_CHARS);
  if (params.subagentOrigin !== undefined) {
    const origin = takeSubagentOrigin(params.subagentOrigin);
    taken.subagentOrigin = origin.subagentOrigin;
    taken.reports.subagentOrigin = origin.report;
  }
  return taken;
}

/**
 * A note the host adds later and the card shows: the rule a resolution saved
 * (`amendment.rulePreview`), why saving it failed (`policyPersistence` reason).
 */
export function takeNote(note: string): { text: string; report: PartReport } {
  return takeText(note, MAX_CHOICE_TEXT_CHARS);
}
