import pino from 'pino';
import { expect, it } from 'vitest';
import { TakenIds } from '../../../../src/relay/hostEvents/takenIds.js';

function taken(now: () => number = () => 0) {
  const told: string[] = [];
  const ids = new TakenIds({
    tell: async (hostId, approvalId, channel) => void told.push(`${hostId}/${approvalId}@${channel}`),
    logger: pino({ level: 'silent' }),
    now,
  });
  return { ids, told };
}

it('tells each approval once, in the channel its card would have gone to', () => {
  const { ids, told } = taken();
  ids.taken('main', 'x-1', 'C1');
  ids.taken('main', 'x-1', 'C1');
  ids.taken('sandbox', 'x-1', 'C2');
  expect(told).toEqual(['main/x-1@C1', 'sandbox/x-1@C2']);
});

it('tells a host a few a minute at most; one left out is told when asked again later', () => {
  let now = 0;
  const { ids, told } = taken(() => now);
  for (let i = 0; i < 20; i++) ids.taken('main', `x-${i}`, 'C1');
  expect(told).toHaveLength(5);
  ids.taken('other', 'y-1', 'C2');
  expect(told).toHaveLength(6);
  now = 60_000;
  ids.taken('main', 'x-19', 'C1');
  ids.taken('main', 'x-0', 'C1');
  expect(told.slice(6)).toEqual(['main/x-19@C1']);
});
