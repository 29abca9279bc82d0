import type { Intake } from '../../../domain/record.js';
import type { PartReport } from './partIntake.js';

/** Record fields intake takes in, each counted on its own. */
export type IntakePartName =
  | 'tool'
  | 'title'
  | 'rawArgs'
  | 'subject'
  | 'reason'
  | 'reviewerReason'
  | 'cuaCardFacts'
  | 'subagentOrigin'
  | 'availableChoices'
  | 'sessionTitle'
  | 'amendment'
  | 'persistence';

export type PartReports = Partial<Record<IntakePartName, PartReport>>;

const NOTHING_YET: Intake = { maskedSecrets: 0, truncated: false, parts: {} };

function isClean(report: PartReport): boolean {
  return (
    report.maskedSecrets === 0 &&
    !report.truncated &&
    !report.stagesOmitted &&
    !report.choicesWithheld &&
    !report.unreadable
  );
}

/** The intake of a new record. */
export function newIntake(taken: PartReports): Intake {
  return intakeWith(NOTHING_YET, taken);
}

/**
 * The record's intake after the parts in `taken` were taken anew; parts not in `taken` keep what
 * they had. Undefined for a record stored before intake existed: its other parts were never
 * checked, so nothing can be vouched for.
 */
export function intakeWith(previous: Intake, taken: PartReports): Intake;
export function intakeWith(previous: Intake | undefined, taken: PartReports): Intake | undefined;
export function intakeWith(previous: Intake | undefined, taken: PartReports): Intake | undefined {
  if (previous === undefined) return undefined;
  const parts = { ...previous.parts };
  for (const [name, report] of Object.entries(taken)) {
    if (isClean(report)) delete parts[name];
    else parts[name] = report;
  }
  let maskedSecrets = 0;
  let truncated = false;
  let stagesOmitted = 0;
  for (const report of Object.values(parts)) {
    maskedSecrets += report.maskedSecrets;
    truncated ||= report.truncated || (report.stagesOmitted ?? 0) > 0;
    stagesOmitted += report.stagesOmitted ?? 0;
  }
  return stagesOmitted > 0
    ? { maskedSecrets, truncated, stagesOmitted, parts }
    : { maskedSecrets, truncated, parts };
}
