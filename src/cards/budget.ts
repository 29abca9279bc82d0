// How many characters each shrinkable part of a card may use. renderCard tries the levels in
// order and keeps the first card whose block text fits Slack's budget, so a normal approval shows
// everything and a huge one gives up its arguments and stage list first, then everything else.

export interface CardBudget {
  /** A one-line fact: tool, path, host, target, session title, ids. */
  field: number;
  title: number;
  /** The full shell command, as a code block. */
  command: number;
  /** The whole stage list, and each stage line. */
  stages: number;
  stageLine: number;
  /** rawArgs, as a code block. */
  rawArgs: number;
  /** The subject as JSON, for kinds we do not know and computer-use lock holders. */
  subjectJson: number;
  /** Each of reason, reviewer's reason, feedback, amendment rule, superseded note. */
  reason: number;
  /** Computer-use steps and data rows, all of them, and each one. */
  cua: number;
  cuaLine: number;
  windowTitle: number;
  /** "label: rulePreview" lines next to the buttons, all of them, and each one. */
  previews: number;
  previewLine: number;
  /** Every button label and confirm dialog together. */
  buttons: number;
}

const GENEROUS: CardBudget = {
  field: 500,
  title: 500,
  command: 2000,
  stages: 2800,
  stageLine: 400,
  rawArgs: 2800,
  subjectJson: 1500,
  reason: 1500,
  cua: 2500,
  cuaLine: 400,
  windowTitle: 500,
  previews: 2000,
  previewLine: 400,
  buttons: 5000,
};

/** From generous to the least a card can show; the last level always fits (see the tests). */
export const BUDGET_LEVELS: readonly CardBudget[] = [
  GENEROUS,
  { ...GENEROUS, rawArgs: 1200, stages: 1500 },
  { ...GENEROUS, rawArgs: 500, stages: 800, command: 800, subjectJson: 600 },
  {
    ...GENEROUS,
    rawArgs: 500,
    stages: 800,
    command: 800,
    subjectJson: 600,
    reason: 600,
    cua: 1200,
    windowTitle: 300,
    previews: 1000,
    previewLine: 250,
    title: 300,
    field: 300,
    buttons: 4000,
  },
  {
    field: 150,
    title: 150,
    command: 300,
    stages: 500,
    stageLine: 200,
    rawArgs: 300,
    subjectJson: 300,
    reason: 250,
    cua: 500,
    cuaLine: 150,
    windowTitle: 150,
    previews: 500,
    previewLine: 150,
    buttons: 3500,
  },
];
