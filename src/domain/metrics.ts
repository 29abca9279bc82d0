import { FiredStep, type Resolution } from './record.js';

// What the flow counts for /metrics, as every layer may name it: the port the relay, the store and
// the Slack adapters count into (slack/metrics/ implements it with prom-client). Each label value
// comes from a closed set of our own words, or from the configuration (route names): never from
// what a user or a host wrote, so the number of series is bounded and nothing can be injected.

/** How an approval came to its decision: the label of the time-to-decision histogram. */
export const DECISION_OUTCOMES = ['person', 'grant', 'policy', 'timeout'] as const;
export type DecisionOutcome = (typeof DECISION_OUTCOMES)[number];

/** The escalation step kinds (the record's own enum): the label of the steps fired. */
export const ESCALATION_ACTIONS: readonly FiredStep['action'][] = FiredStep.shape.action.options;

/**
 * Kinds of escalation failures: a step's action when it reached nobody, `resolve` (a page's
 * resolve), `internal` (firing a step threw), and the PagerDuty calls. The Escalator counts only
 * these (its count() takes this type), so /metrics can serve each at 0 from the start.
 */
export const ESCALATION_FAILURE_KINDS = [
  ...ESCALATION_ACTIONS,
  'resolve',
  'internal',
  'pagerduty-trigger',
  'pagerduty-resolve',
  'pagerduty-oncalls',
] as const;
export type EscalationFailureKind = (typeof ESCALATION_FAILURE_KINDS)[number];
/** Failures counted so far, by kind; a kind that never failed may be absent. */
export type EscalationFailures = Partial<Record<EscalationFailureKind, number>>;

/** Every Web API method the bot calls; a call of any other is counted as `other`. */
export const SLACK_METHODS = [
  'auth.test',
  'chat.getPermalink',
  'chat.postEphemeral',
  'chat.postMessage',
  'chat.update',
  'conversations.history',
  'conversations.info',
  'conversations.members',
  'conversations.open',
  'usergroups.list',
  'usergroups.users.list',
  'users.conversations',
  'users.info',
  'users.lookupByEmail',
  'views.open',
  'views.publish',
  'views.push',
  'views.update',
  'other',
] as const;
export type SlackMethodLabel = (typeof SLACK_METHODS)[number];

const KNOWN_METHODS: ReadonlySet<string> = new Set(SLACK_METHODS);

export function slackMethodLabel(method: string): SlackMethodLabel {
  return KNOWN_METHODS.has(method) ? (method as SlackMethodLabel) : 'other';
}

/**
 * Which outcome a resolution counts as. Our own decide says how it was made (`via`); without it
 * the host decided: `user` is a person in another client, anything else (its policy, its
 * automated reviewer) is `policy`.
 */
export function outcomeOf(resolution: Pick<Resolution, 'via' | 'resolvedBy'>): DecisionOutcome {
  switch (resolution.via) {
    case 'click':
      return 'person';
    case 'grant':
      return 'grant';
    case 'timeout':
      return 'timeout';
    default:
      return resolution.resolvedBy === 'user' ? 'person' : 'policy';
  }
}

/** The counters and histograms the flow feeds. Each call is an addition in memory: no I/O. */
export interface Metrics {
  /** An approval resolved `seconds` after it was opened, on `route` (the record's route name). */
  decided(route: string | undefined, outcome: DecisionOutcome, seconds: number): void;
  /** A click's decision was accepted by the host `seconds` after the click reached the bot. */
  clickDecided(seconds: number): void;
  /** A remembered grant was looked for; `hit` when a live one answers the request. */
  grantLookup(hit: boolean): void;
  /** A remembered grant decided a request. */
  grantUsed(): void;
  /** An escalation step fired (whether or not it reached anyone). */
  escalationStep(action: FiredStep['action']): void;
  /** A Slack Web API call failed; `rateLimited` when Slack answered 429. */
  slackFailed(method: string, rateLimited: boolean): void;
  /** The Redis client reported an error (connection refused or lost, authentication). */
  redisError(): void;
}
