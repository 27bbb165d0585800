/**
 * A load-generating process for the concurrency test: several connections hammer one combination
 * with raw reservations (single and batched script calls) and report every reply. Run: node worker.ts <port> <name> <connections> <requests> <seed> <thinkMs>
 * (thinkMs 0 = flood: 8 lanes per connection, no pause; else 1 lane per connection, each pausing
 * up to thinkMs between requests, so the queue hovers near empty and near full).
 */
import { Redis } from "ioredis";
import { combineRedis, fromIoredis, RedisSmoothLimiter, RedisStore, RedisWindowLimiter } from "../../src/redis.ts";
import { LOAD } from "./load.ts";

const [port, name, connections, requests, seed, thinkMs] = process.argv.slice(2);
const think = Number(thinkMs);
let state = Number(seed) >>> 0 || 1;
function random(): number {
  state ^= state << 13;
  state ^= state >>> 17;
  state ^= state << 5;
  return (state >>> 0) / 2 ** 32;
}

const clients = Array.from({ length: Number(connections) }, () => new Redis(Number(port), "127.0.0.1"));
const combos = clients.map((client) => {
  const store = new RedisStore({ client: fromIoredis(client), name: name!, timeout: 10_000 });
  return combineRedis(
    new RedisWindowLimiter({ store, key: "window", limit: LOAD.windowLimit, interval: LOAD.windowMs }),
    new RedisSmoothLimiter({ store, key: "smooth", limit: LOAD.smoothLimit, interval: 1000, burst: LOAD.smoothBurst }),
  );
});
const granted: [string, number, number][] = [];
const refused: string[] = [];
let next = 0;
async function lane(): Promise<void> {
  while (next < Number(requests)) {
    // Half the time several requests go in ONE script call (what the batcher sends), decided in order.
    const k = random() < 0.5 ? 1 : 1 + Math.floor(random() * 6);
    const ns: number[] = [];
    const waits: number[] = [];
    const combo = combos[next % combos.length]!;
    const batch = `${process.pid}-${next}`;
    for (let j = 0; j < k && next < Number(requests); j++) {
      next++;
      ns.push(1 + Math.floor(random() * LOAD.maxPermits));
      const r = random();
      waits.push(r < 0.2 ? Infinity : r < 0.4 ? 0 : Math.floor(random() * LOAD.maxWaitMs));
    }
    const replies = await combo.reserveBatch(batch, ns, waits);
    replies.forEach((reply, j) => {
      const id = `${batch}/${j + 1}`; // the j-th reservation of the batch
      if (reply.code === 1) granted.push([id, reply.at, ns[j]!]);
      else refused.push(id);
    });
    if (think > 0) await new Promise((resolve) => setTimeout(resolve, random() * think));
  }
}
await Promise.all(Array.from({ length: Number(connections) * (think > 0 ? 1 : 8) }, lane));
for (const client of clients) client.disconnect();
process.stdout.write(JSON.stringify({ granted, refused }));
