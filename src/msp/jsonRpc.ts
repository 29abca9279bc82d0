// What both directions of the JSON-RPC connection (connection.ts) share: ids, messages, and
// how a frame is shown in the log.

import { maskPrefix } from '../secrets/maskPrefix.js';

export type JsonRpcId = string | number;

const FRAME_PREVIEW_CHARS = 200;

export type Json = Record<string, unknown>;

export function isPlainObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return isPlainObject(value) && typeof value.then === 'function';
}

/** The start of a frame for the log, with its secrets masked: a malformed frame is agent text too. */
export function preview(line: string): string {
  const { text, cut } = maskPrefix(line, FRAME_PREVIEW_CHARS);
  return cut ? `${text}…` : text;
}

/** A host-chosen id for the log: a number as it is, a string masked and cut like a frame. */
export function previewId(id: JsonRpcId): JsonRpcId {
  return typeof id === 'string' ? preview(id) : id;
}
