// ioredis puts a failed command on its error as `command: { name, args }`: the arguments are the
// password AUTH sent, or the values a refused write carried (a record, a user's text). pino's err
// serializer copies them into the line, and the list of configured secrets cannot catch a value
// too short to scrub (log.ts, MIN_SCRUBBED_LENGTH) nor a record. The command's name says what
// failed; its arguments stay out, on nested errors too (a cluster's `lastNodeError`, a
// transaction's `previousErrors`, an AggregateError's `errors`, a `cause`).

import pino from 'pino';

/** Deeper than any error the bot meets nests; what lies below is not written. */
const MAX_DEPTH = 8;
const TOO_DEEP = '[too deep]';
const CIRCULAR = '[Circular]';

/**
 * `value` as it will be written, with every `command.args` dropped: the same object when there
 * is none in it, otherwise a copy (the error itself is never changed: ioredis may still hold it).
 * An Error below the top goes through pino's serializer too, so that it is written whole.
 */
function withoutArgs(value: unknown, seen: Set<object>, depth: number): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (seen.has(value)) return CIRCULAR;
  if (depth > MAX_DEPTH) return TOO_DEEP;
  if (value instanceof Error) return withoutArgs(pino.stdSerializers.err(value), seen, depth);
  // JSON writes what toJSON gives (a Date, a Buffer): no command in it.
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return value;
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      const items = value.map((item) => withoutArgs(item, seen, depth + 1));
      return items.every((item, i) => item === value[i]) ? value : items;
    }
    let copy: Record<string, unknown> | undefined;
    for (const [key, item] of Object.entries(value)) {
      const kept = key === 'command' ? commandName(item) : withoutArgs(item, seen, depth + 1);
      if (kept === item) continue;
      // JSON writes an object's own fields, which the copy holds; the prototype is kept for
      // pino's serialized errors (it holds `raw`, the error itself, for whoever reads the line).
      if (copy === undefined)
        copy = Object.assign(Object.create(Object.getPrototypeOf(value)), value) as Record<string, unknown>;
      copy[key] = kept;
    }
    return copy ?? value;
  } finally {
    seen.delete(value);
  }
}

/** A failed command without its arguments. */
function commandName(command: unknown): unknown {
  if (typeof command !== 'object' || command === null || !('args' in command)) return command;
  const { args: _args, ...rest } = command as Record<string, unknown>;
  return rest;
}

/** pino's err serializer, less every failed command's arguments. */
export function errWithoutArgs(err: unknown): unknown {
  return withoutArgs(pino.stdSerializers.err(err as Error), new Set(), 0);
}
