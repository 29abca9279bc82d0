/**
 * As many lines as fit in `budget` characters (joined by newlines), in order, with
 * "… and K more <noun>" in place of those left out. The line at `keep` is always shown, so a long
 * shell command still shows the stage being decided. Lines are rendered on demand: a thousand
 * computer-use steps cost no more than the few that are shown.
 */
export function fitLines(
  count: number,
  lineAt: (index: number) => string,
  budget: number,
  noun: readonly [one: string, many: string],
  keep?: number,
): string[] {
  const cost = (line: string) => line.length + 1;
  const note = (k: number) => `… and ${k} more ${k === 1 ? noun[0] : noun[1]}`;
  const noteCost = cost(note(count));
  const kept = keep !== undefined && keep >= 0 && keep < count ? lineAt(keep) : undefined;
  const keepCost = kept !== undefined ? cost(kept) : 0;

  const out: string[] = [];
  let used = 0;
  let i = 0;
  for (; i < count; i++) {
    const line = i === keep && kept !== undefined ? kept : lineAt(i);
    if (i !== keep) {
      const reserve = (kept !== undefined && keep !== undefined && i < keep ? keepCost : 0) + 2 * noteCost;
      if (used + cost(line) + reserve > budget) break;
    }
    out.push(line);
    used += cost(line);
  }
  if (i === count) return out;

  // Without room for notes the rest might still fit whole; then no note is needed.
  let whole = used;
  const rest: string[] = [];
  for (let j = i; j < count && whole <= budget; j++) {
    const line = j === keep && kept !== undefined ? kept : lineAt(j);
    rest.push(line);
    whole += cost(line);
  }
  if (whole <= budget && i + rest.length === count) return [...out, ...rest];

  if (kept !== undefined && keep !== undefined && keep >= i) {
    if (keep > i) out.push(note(keep - i));
    out.push(kept);
    const after = count - keep - 1;
    if (after > 0) out.push(note(after));
  } else {
    out.push(note(count - i));
  }
  return out;
}
