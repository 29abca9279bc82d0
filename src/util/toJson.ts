/** JSON for display. Host values come from JSON.parse, but a display must never throw. */
export function toJson(value: unknown, indent?: number): string {
  try {
    return JSON.stringify(value, null, indent) ?? String(value);
  } catch {
    return String(value);
  }
}

/** rawArgs is "a verbatim JSON string, may be almost-JSON": pretty when it parses, else as sent. */
export function prettyArgs(rawArgs: string): string {
  try {
    return JSON.stringify(JSON.parse(rawArgs), null, 2);
  } catch {
    return rawArgs;
  }
}
