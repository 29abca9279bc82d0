// What one approval may store of what the agent and host wrote, in characters of the record's
// JSON. Beyond these the text is cut with a visible note, so that huge frames cannot multiply
// Redis memory, the CPU of every later record update or the size of every card render: the
// record is small by construction. An ordinary approval stores a few kilobytes. Identifiers,
// which must be kept as sent, are bounded where frames are parsed (msp/protocol.ts): a frame
// with a longer one never reaches intake.

import { MAX_HOST_ID_CHARS, MAX_REQUIREMENT_REF_CHARS } from '../../../msp/protocol.js';

/** rawArgs: with the subject, the 64 KiB the issue asks for. */
export const MAX_RAW_ARGS_CHARS = 32 * 1024;
/** The whole subject: command, stages, path, host, fields of unknown kinds. */
export const MAX_SUBJECT_CHARS = 32 * 1024;
/** One string inside the subject, so that a huge command cannot leave the stages nothing. */
export const MAX_SUBJECT_STRING_CHARS = 16 * 1024;
/** Shell stages kept; the stage being decided is always among them. */
export const MAX_SHELL_STAGES = 64;
/** title, reason, reviewerReason, the session's title: each. */
export const MAX_TEXT_CHARS = 4 * 1024;
export const MAX_TOOL_CHARS = 256;
/** Choices kept (a card shows at most 75) and all their labels and previews together. */
export const MAX_CHOICES = 100;
export const MAX_CHOICES_CHARS = 16 * 1024;
/** One choice label or rule preview. */
export const MAX_CHOICE_TEXT_CHARS = 2 * 1024;
/** Computer-use facts: window title, page, steps and data rows together. */
export const MAX_CUA_CHARS = 16 * 1024;
export const MAX_SUBAGENT_ORIGIN_CHARS = 1024;
/** Host enums such as a stage resolution's kind. */
export const MAX_LABEL_CHARS = 64;
/** Values of unknown shape: nesting and keys per object kept. */
export const MAX_JSON_DEPTH = 8;
export const MAX_JSON_KEYS = 64;

/** One id in the record's JSON, quotes included. */
const ID_CHARS = MAX_HOST_ID_CHARS + 2;
/**
 * A stage or choice whose text is all cut still keeps its ids (a stage its requirement ref, a
 * choice its id, decision and scope), position and flags.
 */
const STAGE_SKELETON_CHARS = MAX_REQUIREMENT_REF_CHARS + 256;
const CHOICE_SKELETON_CHARS = 3 * ID_CHARS + 160;
/**
 * Timestamps, phase, channel, version, the intake tally; the approval's, session's, turn's,
 * item's and tool call's ids and the current requirement ref.
 */
const RECORD_FIELDS_CHARS = 4 * 1024 + 5 * ID_CHARS + MAX_REQUIREMENT_REF_CHARS;

/**
 * Upper bound of one approval record's JSON, whatever the agent sent. Identifiers the host must
 * get back unchanged (approvalId, sessionId, requirement and choice ids) are stored as sent, at
 * most MAX_HOST_ID_CHARS each. The capabilities derived from the subject repeat at most the
 * subject's share.
 */
export const MAX_RECORD_CHARS =
  MAX_RAW_ARGS_CHARS +
  2 * MAX_SUBJECT_CHARS +
  MAX_SHELL_STAGES * STAGE_SKELETON_CHARS +
  4 * MAX_TEXT_CHARS +
  MAX_TOOL_CHARS +
  MAX_CHOICES_CHARS +
  MAX_CHOICES * CHOICE_SKELETON_CHARS +
  MAX_CUA_CHARS +
  MAX_SUBAGENT_ORIGIN_CHARS +
  RECORD_FIELDS_CHARS;

/**
 * The full text kept beside a record whose subject or arguments intake cut, for "View full": each
 * of the two at most what one modal can show (about 90 sections of 3,000 characters), so that
 * either alone can fill it. Kept only for requests that were cut.
 */
export const MAX_FULL_TEXT_CHARS = 256 * 1024;
