// The defaults of the environment variables (docs/configuration.md lists each one).

import { DEFAULT_REDIS_URL } from './redisConfig.js';

export const DEFAULTS = {
  slackApiUrl: 'https://slack.com/api/',
  slackApiTimeout: '10s',
  port: 3000,
  redisUrl: DEFAULT_REDIS_URL,
  hostId: 'default',
  sandboxMode: 'default',
  grantTtl: '8h',
  grantMaxTtl: '7d',
  resolvedTtl: '30d',
  usergroupCacheTtl: '1m',
  membershipCacheTtl: '2m',
  mspRequestTimeout: '30s',
  hostEventBuffer: 10_000,
  maxOpenApprovalsPerHost: 2_000,
  auditMaxLen: 100_000,
  refusalMaxLen: 100_000,
  leaseTtl: '15s',
  pagerDutyEventsUrl: 'https://events.pagerduty.com/v2/enqueue',
  pagerDutyApiUrl: 'https://api.pagerduty.com',
  logLevel: 'info',
} as const;
