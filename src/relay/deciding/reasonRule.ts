import type { ApprovalRecord } from '../../domain/record.js';
import type { RouteRules } from '../../domain/route.js';
import type { ApprovalChoice } from '../../msp/protocol.js';
import type { ReasonMissing } from './decision.js';

/**
 * Why a person's pick may not be decided as it comes: its choice takes a reason (acceptsFeedback),
 * its route requires one (`rejectReason: required`), and it carries none. Asked where the click is
 * taken (ClickHandler) and again where it is claimed (DecisionWarrant): the route may have changed
 * in between (a configuration reloaded), or the replica that took it be of an earlier release.
 * Never asked of a grant or a timeout, which no person makes and which give no reason.
 */
export function reasonMissing(
  record: Pick<ApprovalRecord, 'route'>,
  choice: Pick<ApprovalChoice, 'acceptsFeedback'>,
  rules: Pick<RouteRules, 'rejectReason' | 'quickReasons'>,
  feedback: string | undefined,
): ReasonMissing | undefined {
  if (!choice.acceptsFeedback || rules.rejectReason !== 'required' || feedback?.trim()) return undefined;
  return {
    kind: 'reasonMissing',
    ...(record.route === undefined ? {} : { route: record.route }),
    quickReasons: rules.quickReasons.length > 0,
  };
}
