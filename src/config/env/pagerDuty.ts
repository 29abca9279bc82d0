// PagerDuty: the Events API (paging) and the REST API (who is on call), and what a route's
// escalation and on-call need of them.

import type { Route } from '../../domain/route.js';
import { ConfigError } from '../common.js';
import { DEFAULTS } from '../defaults.js';
import { ConfigProblems } from '../problems.js';
import { baseUrlVar, secretVar, urlVar } from './read.js';

export interface PagerDutyConfig {
  routingKey?: string;
  apiToken?: string;
  eventsUrl: string;
  apiUrl: string;
}

export function pagerDutyConfig(env: NodeJS.ProcessEnv): PagerDutyConfig {
  // Every invalid variable is named at once (problems.ts), not only the first.
  const problems = new ConfigProblems();
  const routingKey = problems.take(() =>
    secretVar(
      env,
      'PAGERDUTY_ROUTING_KEY',
      'paste the integration key of an Events API v2 integration from PagerDuty, or unset it',
    ),
  );
  const apiToken = problems.take(() =>
    secretVar(
      env,
      'PAGERDUTY_API_TOKEN',
      'paste a REST API key from PagerDuty (Integrations → API Access Keys), or unset it',
    ),
  );
  const eventsUrl = problems.take(() => urlVar(env, 'PAGERDUTY_EVENTS_URL', DEFAULTS.pagerDutyEventsUrl));
  // REST paths (`oncalls`) are resolved against it, which drops its query and fragment.
  const pagerDutyApiUrl = problems.take(() =>
    baseUrlVar(env, 'PAGERDUTY_API_URL', DEFAULTS.pagerDutyApiUrl, {
      calls: 'would be dropped from every REST call',
      what: 'REST API base URL',
    }),
  );
  problems.throwIfAny();
  return {
    ...(routingKey ? { routingKey } : {}),
    ...(apiToken ? { apiToken } : {}),
    eventsUrl: eventsUrl!,
    apiUrl: pagerDutyApiUrl!,
  };
}

/** What a route's escalation needs of the environment: a routing key to page, a token to ask PagerDuty. */
export function checkEscalation(
  configPath: string | undefined,
  routes: readonly Route[],
  pagerDuty: { routingKey?: string; apiToken?: string },
): void {
  routes.forEach((route, i) => {
    const at = `COUNTERSIGN_CONFIG (${configPath}): routes[${i}]`;
    route.escalation?.forEach((step, j) => {
      if (step.action === 'page' && !step.routingKey && !pagerDuty.routingKey) {
        throw new ConfigError(
          'COUNTERSIGN_CONFIG',
          `${at}.escalation[${j}] pages, but there is no routing key: set PAGERDUTY_ROUTING_KEY or the step's routingKey`,
        );
      }
    });
    if (route.oncall?.kind === 'pagerduty' && !pagerDuty.apiToken) {
      throw new ConfigError(
        'COUNTERSIGN_CONFIG',
        `${at}.oncall.pagerduty needs PAGERDUTY_API_TOKEN: set it, or use a usergroup or rotation`,
      );
    }
  });
}

/** The routing keys of the routes' page steps (those that do not use PAGERDUTY_ROUTING_KEY). */
export function stepRoutingKeys(routes: readonly Route[]): string[] {
  return routes.flatMap((route) => route.escalation ?? []).flatMap((step) => step.routingKey ?? []);
}
