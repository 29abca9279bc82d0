import type { Redis } from 'ioredis';

/**
 * Commands issued together (in one synchronous stretch, as `Promise.all([...])` issues them) leave
 * in one socket write, in the order they were issued. A write to a loopback socket costs a system
 * call and a wake-up of Redis, more than the command itself: an approval's create, its grant
 * lookup and its open-set entry, or a card's place and its message map, each go in one write.
 * Unlike ioredis's auto-pipelining (see redisConnection.ts), no command waits behind another's
 * reply and none leaves out of order: the socket is corked only until the next microtask.
 */
export function coalesceWrites(redis: Redis): Redis {
  const send = redis.sendCommand.bind(redis);
  let corked = false;
  redis.sendCommand = (command, stream) => {
    const socket = redis.stream;
    if (!corked && socket?.writable && redis.status === 'ready') {
      corked = true;
      socket.cork();
      queueMicrotask(() => {
        corked = false;
        socket.uncork();
      });
    }
    return send(command, stream);
  };
  return redis;
}
