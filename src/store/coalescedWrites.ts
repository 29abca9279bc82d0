import type { Redis } from 'ioredis';

/**
 * Commands issued together leave in one socket write, in the order they were issued. A write to
 * a loopback socket costs a system call and a wake-up of Redis, more than the command itself: an
 * approval's create, its grant lookup and its open-set entry, or a card's place and its message
 * map, each go in one write.
 *
 * How long the socket stays corked follows Nagle's rule. With no reply outstanding, Redis is idle
 * and waiting helps nobody: the commands leave at the next microtask, as soon as the synchronous
 * stretch that issued them (a `Promise.all([...])`) is done, so a lone click's lookup leaves at
 * once. With replies outstanding, Redis is busy with earlier commands anyway: the socket stays
 * corked until this turn of the event loop has run its I/O callbacks (setImmediate), so that a
 * burst's creates, and the card places of every Slack answer read in the same turn, share one
 * write instead of one each (docs/performance.md, "sixth round").
 *
 * Unlike ioredis's auto-pipelining (see redisConnection.ts), no command waits behind another's
 * reply and none leaves out of order.
 */
export function coalesceWrites(redis: Redis): Redis {
  const send = redis.sendCommand.bind(redis);
  let corked = false;
  redis.sendCommand = (command, stream) => {
    const socket = redis.stream;
    if (!corked && socket?.writable && redis.status === 'ready') {
      corked = true;
      socket.cork();
      const flush = () => {
        corked = false;
        socket.uncork();
      };
      if (redis.commandQueue.length > 0) setImmediate(flush);
      else queueMicrotask(flush);
    }
    return send(command, stream);
  };
  return redis;
}
