/**
 * The first `max` UTF-16 units of `text`, one fewer when the last would be the first half of a
 * surrogate pair: a lone half is no character, and Slack or PagerDuty would show it as garbage
 * or refuse the text.
 */
export function cutAtCodePoint(text: string, max: number): string {
  if (text.length <= max) return text;
  const last = text.charCodeAt(max - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}

/** `text` as it is when it fits in `max`, else cut there (cutAtCodePoint) and marked with `…`. */
export function cutWithMark(text: string, max: number): string {
  return text.length <= max ? text : `${cutAtCodePoint(text, max)}…`;
}
