// The few Block Kit shapes a card is made of. Callers pass text that is already escaped and cut;
// these only fix the shape, so every mrkdwn object carries `verbatim: true` (no auto-linking of
// URLs or names in text we did not write).
import type {
  ContextBlock,
  DividerBlock,
  HeaderBlock,
  MrkdwnElement,
  PlainTextElement,
  SectionBlock,
} from '@slack/types';

export function mrkdwn(text: string): MrkdwnElement {
  return { type: 'mrkdwn', text, verbatim: true };
}

export function plainText(text: string): PlainTextElement {
  return { type: 'plain_text', text, emoji: false };
}

export function section(text: string): SectionBlock {
  return { type: 'section', text: mrkdwn(text) };
}

export function plainSection(text: string): SectionBlock {
  return { type: 'section', text: plainText(text) };
}

export function header(text: string): HeaderBlock {
  return { type: 'header', text: plainText(text) };
}

export function context(texts: readonly string[]): ContextBlock {
  return { type: 'context', elements: texts.map(mrkdwn) };
}

export function divider(): DividerBlock {
  return { type: 'divider' };
}

/**
 * Mrkdwn lines packed into as few sections as the 3,000-character section limit allows. Lines
 * are never split, so an escape or a `<!date…>` token is never cut in half; callers keep each
 * line short.
 */
export function packSections(lines: readonly string[], max = 3000): SectionBlock[] {
  const out: SectionBlock[] = [];
  let current = '';
  for (const line of lines) {
    if (current !== '' && current.length + 1 + line.length > max) {
      out.push(section(current));
      current = '';
    }
    current = current === '' ? line : `${current}\n${line}`;
  }
  if (current !== '') out.push(section(current));
  return out;
}
