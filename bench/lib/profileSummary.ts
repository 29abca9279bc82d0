import { readFileSync } from 'node:fs';

// A V8 .cpuprofile summed by where the time went: the areas the performance notes compare, bot
// against floor, in microseconds of main thread per approval.

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** The area a sample's function belongs to, by its script. */
export function areaOf({ functionName, url }: ProfileNode['callFrame']): string {
  if (functionName === '(garbage collector)') return 'garbage collection';
  if (functionName === '(idle)') return 'idle';
  if (functionName === '(program)') return 'V8 (program)';
  if (/ioredis|redis-parser|denque|cluster-key-slot/.test(url)) return 'ioredis';
  if (/pino|sonic-boom|thread-stream/.test(url)) return 'pino';
  if (url.includes('@slack/web-api')) return 'Web API client';
  if (url.includes('@slack/bolt')) return 'Bolt';
  if (url.includes('undici')) return 'undici';
  if (url.includes('zod')) return 'zod';
  if (url.includes('/dist/cards/')) return 'Block Kit rendering';
  if (url.includes('/dist/relay/intake/') || url.includes('/dist/secrets/'))
    return 'intake (masking, bounds)';
  if (url.includes('/dist/store/')) return 'store (record, scripts)';
  if (url.includes('/dist/slack/')) return 'Slack side (posting, retries)';
  if (url.includes('/dist/')) return 'rest of the bot';
  if (url.includes('/bench/floors/')) return 'floor script';
  if (url.startsWith('node:')) return 'Node internals (streams, net, timers)';
  if (url === '' && functionName.startsWith('RegExp:')) return 'regular expressions';
  if (url === '') return 'native (string writes, JSON, microtasks)';
  return 'other';
}

/** Milliseconds of samples per area, idle left out. */
export function areaTimes(path: string): Map<string, number> {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const times = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const area = areaOf(byId.get(id)!.callFrame);
    if (area === 'idle') return;
    times.set(area, (times.get(area) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
  return times;
}
