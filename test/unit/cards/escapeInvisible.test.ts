// Characters that Slack draws as nothing, or that reorder what is drawn around them (Trojan
// Source, CVE-2021-42574), are shown as a visible marker on every surface: what the approver reads
// is then what runs.
import { describe, expect, it } from 'vitest';
import {
  clip,
  codeBlock,
  codeBlockFits,
  codeBlocks,
  escapeMrkdwn,
  fitsWithin,
  inlineCode,
  inlineCodeFits,
  quote,
  truncate,
} from '../../../src/cards/escape.js';
import { hasHiddenCharacters } from '../../../src/util/hiddenCharacters.js';

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

/** Every code point that must never reach Slack as it is, but for \n and \t (see below). */
const HIDDEN = [
  ...range(0x00, 0x1f).filter((c) => c !== 0x0a && c !== 0x09),
  ...range(0x7f, 0x9f),
  0x061c,
  ...range(0x200b, 0x200f),
  ...range(0x202a, 0x202e),
  ...range(0x2060, 0x2064),
  ...range(0x2066, 0x2069),
  0x2028,
  0x2029,
  0xfeff,
  // Drawn as nothing too, missed by the first list: the soft hyphen, the combining grapheme
  // joiner, the Hangul fillers, Khmer's inherent vowels, Mongolian's selectors and vowel
  // separator, the unassigned and deprecated format characters, the variation selectors,
  // interlinear annotations, shorthand and musical format controls, and the tags.
  0x00ad,
  0x034f,
  0x115f,
  0x1160,
  0x17b4,
  0x17b5,
  ...range(0x180b, 0x180f),
  0x2065,
  ...range(0x206a, 0x206f),
  0x3164,
  ...range(0xfe00, 0xfe0f),
  0xffa0,
  ...range(0xfff9, 0xfffb),
  ...range(0x1bca0, 0x1bca3),
  ...range(0x1d173, 0x1d17a),
  0xe0001,
  ...range(0xe0020, 0xe007f),
  0xe0100,
  0xe01ef,
  // Half of a surrogate pair, alone: no character at all.
  0xd800,
  0xdfff,
];

const marker = (cp: number) => `⟨U+${cp.toString(16).toUpperCase().padStart(4, '0')}⟩`;
const hex = (cp: number) => `U+${cp.toString(16).padStart(4, '0')}`;

describe('invisible and direction-changing characters', () => {
  it.each(HIDDEN.map((cp) => [hex(cp), cp]))('%s is shown as a marker in every mode', (_, cp) => {
    const ch = String.fromCodePoint(cp as number);
    const shown = `a${marker(cp as number)}b`;
    const raw = `a${ch}b`;
    expect(escapeMrkdwn(raw)).toBe(shown);
    expect(clip(raw, 100)).toBe(shown);
    expect(truncate(raw, 100)).toBe(shown);
    expect(quote(raw, 100)).toBe(`“${shown}”`);
    expect(inlineCode(raw, 100)).toBe(`\`${shown}\``);
    expect(codeBlock(raw, 100)).toBe(`\`\`\`\n${shown}\n\`\`\``);
    expect(codeBlocks(raw, 100, 1).blocks).toEqual([`\`\`\`\n${shown}\n\`\`\``]);
  });

  it('keeps \\n in text and code, a marker in inline code; a tab in code only', () => {
    expect(escapeMrkdwn('a\nb')).toBe('a\nb');
    expect(codeBlock('a\nb', 100)).toBe('```\na\nb\n```');
    // Not a space: `echo ok⏎rm -rf /` must not read as one echo.
    expect(inlineCode('a\nb', 100)).toBe(`\`a${marker(0x0a)}b\``);
    expect(codeBlock('a\tb', 100)).toBe('```\na\tb\n```');
    expect(inlineCode('a\tb', 100)).toBe('`a\tb`');
    expect(escapeMrkdwn('a\tb')).toBe(`a${marker(9)}b`);
  });

  it('shows a carriage return in inline code instead of dropping it', () => {
    expect(inlineCode('rm x\r\ny', 100)).toBe(`\`rm x${marker(0x0d)}${marker(0x0a)}y\``);
    expect(codeBlock('rm x\r\ny', 100)).toBe(`\`\`\`\nrm x${marker(0x0d)}\ny\n\`\`\``);
  });

  it('the review’s commands read as what runs', () => {
    expect(codeBlock('rm -rf /tmp/\u202Egpj.exe\u202C ok', 200)).toBe(
      '```\nrm -rf /tmp/⟨U+202E⟩gpj.exe⟨U+202C⟩ ok\n```',
    );
    expect(inlineCode('ls\u200B -la \u2066x\u2069', 200)).toBe('`ls⟨U+200B⟩ -la ⟨U+2066⟩x⟨U+2069⟩`');
  });

  it('shows text hidden in tags, a soft hyphen in a path and a filler passing for a space', () => {
    const tags = [...'rm -rf ~'].map((c) => String.fromCodePoint(0xe0000 + c.charCodeAt(0))).join('');
    expect(inlineCode(`ls${tags}`, 400)).toBe(
      `\`ls${[...'rm -rf ~'].map((c) => marker(0xe0000 + c.charCodeAt(0))).join('')}\``,
    );
    expect(codeBlock('rm -rf /srv/app\u00ADdata', 200)).toBe('```\nrm -rf /srv/app⟨U+00AD⟩data\n```');
    expect(escapeMrkdwn('cp a\u3164b c')).toBe('cp a⟨U+3164⟩b c');
  });

  it('a typed confirmation target holding any of them cannot be typed as shown', () => {
    for (const cp of HIDDEN) expect(hasHiddenCharacters(`a${String.fromCodePoint(cp)}b`)).toBe(true);
    expect(hasHiddenCharacters('deploy prod-eu ✔ 東京 é')).toBe(false);
  });

  it('keeps the zero-width spaces it inserts itself, and marks one that came in', () => {
    expect(escapeMrkdwn('@here')).toBe('@\u200Bhere');
    expect(codeBlock('a```b', 100)).toBe('```\na`\u200B`\u200B`b\n```');
    expect(escapeMrkdwn('@\u200Bhere')).toBe('@⟨U+200B⟩here');
  });

  it('counts markers against every limit, never cuts one, and counts the source in the note', () => {
    const raw = '\u202E'.repeat(200);
    for (const max of [1, 5, 9, 10, 17, 30, 31, 40, 57, 100, 301]) {
      for (const out of [truncate(raw, max), clip(raw, max), quote(raw, max), inlineCode(raw, max)]) {
        expect(out.length).toBeLessThanOrEqual(max);
        expect(out.replace(/⟨U\+202E⟩/g, '')).not.toMatch(/[⟨⟩\u202E]|U\+/);
      }
      expect(codeBlock(raw, max).length).toBeLessThanOrEqual(Math.max(max, 0));
    }
    const out = truncate(raw, 100);
    const kept = (out.match(/⟨U\+202E⟩/g) ?? []).length;
    expect(out).toContain(`… ${200 - kept} more characters`);
    expect(fitsWithin('\u202E', 1)).toBe(false);
    expect(fitsWithin('\u202E', 8)).toBe(true);
    expect(inlineCodeFits('\u202E', 9)).toBe(false);
    expect(codeBlockFits('\u202E', 9)).toBe(false);
  });
});
