import { clip } from './escape.js';

// Slack user ids we got from Slack itself (a click's user); checked anyway, since a mention built
// from anything else would be live markup.
const SLACK_USER_ID = /^[UW][A-Z0-9]{2,40}$/;

/** `<@U…>` for a Slack user id, or the value escaped when it does not look like one. */
export function mentionUser(userId: string): string {
  return SLACK_USER_ID.test(userId) ? `<@${userId}>` : clip(userId, 60);
}
