/**
 * Red-team worker (not a test): one process reserving per dimension on a shared named Redis
 * combination through the PUBLIC API, then settling / cancelling / releasing, reporting what it kept.
 * Run: node new-redis-worker.ts <port> <name> <requests> <seed>
 */
import { Redis } from "ioredis";
import { combineRedis, fromIoredis, RedisStore, RedisWindowLimiter } from "../../src/redis.ts";

const [port, name, count, seedArg] = process.argv.slice(2);
let state = Number(seedArg) >>> 0 || 7;
const random = (): number => {
  state ^= state << 13;
  state ^= state >>> 17;
  state ^= state << 5;
  return (state >>> 0) / 2 ** 32;
};
const client = new Redis(Number(port), "127.0.0.1");
const store = new RedisStore({ client: fromIoredis(client), name: name!, timeout: 10_000 });
const llm = combineRedis({
  requests: new RedisWindowLimiter({ store, key: "rpm", limit: 10, interval: 1000 }),
  tokens: new RedisWindowLimiter({ store, key: "tpm", limit: 3000, interval: 1000 }),
});
const kept: { at: number; requests: number; tokens: number; how: string; applied: boolean; second: boolean }[] = [];
async function one(): Promise<void> {
  const tokens = 50 + Math.floor(random() * 550);
  const r = await llm.reserve({ requests: 1, tokens });
  const at = performance.timeOrigin + performance.now();
  await new Promise((resolve) => setTimeout(resolve, random() * 20));
  const pick = random();
  let how: string, req: number, tok: number;
  if (pick < 0.3) { how = "settle-tokens"; tok = Math.floor(tokens / 2); req = 1; r.settle({ tokens: tok }); }
  else if (pick < 0.5) { how = "cancel"; req = 0; tok = 0; r.cancel(); }
  else if (pick < 0.7) { how = "release"; req = 1; tok = tokens; r.release(); }
  else if (pick < 0.85) { how = "settle-1"; req = 1; tok = 1; r.settle(1); }
  else { how = "settle-record"; req = 0; tok = 10; r.settle({ requests: 0, tokens: 10 }); }
  const applied = await r.applied!;
  // a second settle must change nothing
  const second = r.settle({ tokens: 0 });
  kept.push({ at, requests: req, tokens: tok, how, applied, second });
}
const lanes = 4;
let started = 0;
await Promise.all(Array.from({ length: lanes }, async () => {
  while (started < Number(count)) {
    started++;
    await one();
  }
}));
client.disconnect();
process.stdout.write(JSON.stringify(kept));
