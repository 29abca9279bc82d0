/** "45s", "10 min", "2h", "1h 30 min", "3d": how long, in the fewest words. */
export function shortDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const min = Math.round(s / 60);
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  const rest = min % 60;
  if (h < 48) return rest === 0 ? `${h}h` : `${h}h ${rest} min`;
  const d = Math.floor(h / 24);
  const hours = h % 24;
  return hours === 0 ? `${d}d` : `${d}d ${hours}h`;
}
