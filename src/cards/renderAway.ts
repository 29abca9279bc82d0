import type { Away, AwayProblem } from '../domain/away.js';
import type { RenderedMessage } from '../domain/messages.js';
import { section } from './blocks.js';
import { clip } from './escape.js';
import { mentionUser } from './mentionUser.js';
import { slackDate } from './slackDate.js';

// What `/countersign away` and `back` answer, and the App Home lines of someone's absence. Pure:
// slack/awayCommand.ts gathers the facts. Only the user who typed the command sees the answer.

// Angle brackets escaped: Slack reads a bare "<…>" as a link even inside backticks.
const USAGE = '`/countersign away until &lt;3d | 8h | 2026-12-24 | 2026-12-24T09:00Z&gt; [delegate @user]`';

function answer(text: string): RenderedMessage {
  return { text, blocks: [section(text)] };
}

function when(iso: string): string {
  return slackDate(iso) ?? clip(iso, 40);
}

/** Why an away request is refused, in one sentence. */
export function renderAwayRefusal(problem: AwayProblem): RenderedMessage {
  switch (problem.kind) {
    case 'usage':
      return answer(`Say when you are back: ${USAGE}. Nothing was changed.`);
    case 'badUntil':
      return answer(
        `\`${clip(problem.text, 40)}\` is neither a duration (\`3d\`, \`8h\`) nor a date (\`2026-12-24\`, \`2026-12-24T09:00Z\`). Nothing was changed.`,
      );
    case 'untilPast':
      return answer('That time has already passed: say when you will be back. Nothing was changed.');
    case 'untilTooFar':
      return answer(
        `You can be away for at most ${Math.round(problem.maxMs / 86_400_000)} days at once; set it again when that ends. Nothing was changed.`,
      );
    case 'badDelegate':
      return answer(
        `\`${clip(problem.text, 40)}\` is not a Slack user: name your delegate as @someone. Nothing was changed.`,
      );
    case 'delegateSelf':
      return answer(
        'You cannot be your own delegate: name someone else, or leave the delegate out. Nothing was changed.',
      );
    case 'delegateBot':
      return answer('A bot cannot stand in for you: name a person. Nothing was changed.');
    case 'delegateDeactivated':
      return answer('That account is deactivated and cannot stand in for you. Nothing was changed.');
    case 'delegateStranger':
      return answer(
        problem.external
          ? 'Your delegate belongs to another Slack workspace or organization and may not stand in for you. Nothing was changed.'
          : 'Guests may not stand in for anyone: name a full member of the workspace. Nothing was changed.',
      );
    case 'delegateUnknown':
      return answer(
        'Slack did not confirm who your delegate is just now: try again in a moment. Nothing was changed.',
      );
    case 'delegateFull':
      return answer(
        `Your delegate already stands in for ${problem.max} people, the most anyone can at once: name someone else. Nothing was changed.`,
      );
    case 'youUnknown':
      return answer(
        'Slack did not confirm who you are just now: try again in a moment. Nothing was changed.',
      );
    case 'youStranger':
      return answer('Only full members of the workspace can be away in Countersign. Nothing was changed.');
  }
}

/** The answer once an absence is set. */
export function renderAwaySet(away: Away): RenderedMessage {
  const delegate = away.delegate
    ? ` ${mentionUser(away.delegate)} is asked in your place and may decide what you may.`
    : ' Nobody stands in for you.';
  return answer(
    `You are away until ${when(away.until)}: escalation passes you by.${delegate} \`/countersign back\` ends it sooner.`,
  );
}

/** The answer to `back`: `was` the absence that ended, if there was one. */
export function renderBack(was: Away | undefined): RenderedMessage {
  if (!was) return answer('You were not away. Nothing was changed.');
  const delegate = was.delegate ? ` ${mentionUser(was.delegate)} no longer stands in for you.` : '';
  return answer(`Welcome back: escalation reaches you again.${delegate}`);
}

/** The App Home lines of the user's own absence and of those they stand in for. */
export function awayStatusLines(own: Away | undefined, standingInFor: readonly Away[]): string[] {
  const lines: string[] = [];
  if (own) {
    const delegate = own.delegate
      ? `; ${mentionUser(own.delegate)} stands in for you`
      : '; nobody stands in for you';
    lines.push(
      `:palm_tree: You are away until ${when(own.until)}${delegate}. \`/countersign back\` ends it.`,
    );
  } else {
    lines.push('You are not away. `/countersign away until 3d delegate @someone` sets it.');
  }
  for (const away of standingInFor) {
    lines.push(
      `:handshake: You stand in for ${mentionUser(away.userId)} until ${when(away.until)}: you are asked in their place and may decide what they may.`,
    );
  }
  return lines;
}
