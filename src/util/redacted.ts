// How a hidden secret reads, in the start-up line and in every log line.

export const REDACTED = '[redacted]';
/** What the start-up log shows for a secret that is set. */
export const SECRET_SET = '[set]';
