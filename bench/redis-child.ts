/**
 * One process of the scaling section of `bench/redis.ts`: its own ioredis connection, the same keys
 * as its siblings. The parent sends `{ scenario, family, lanes, startAt, seconds }` over IPC; the
 * child warms up, starts at `startAt` (epoch ms, so all siblings start together), runs its closed
 * loops, and answers `{ count, sample }` (a random sample of its latencies in ms).
 *
 * @module
 */
import { Redis } from "ioredis";
import { closedLoop, decision } from "./redis-scenarios.ts";

interface Job {
  scenario: string;
  family: string;
  lanes: number;
  startAt: number;
  seconds: number;
}

const port = Number(process.argv[2]);
const client = new Redis(port, "127.0.0.1");
const SAMPLE = 4000;

process.on("message", (message: Job | "exit") => {
  if (message === "exit") {
    client.disconnect();
    process.exit(0);
  }
  void run(message).then((result) => process.send!(result));
});

async function run(job: Job): Promise<{ count: number; sample: number[] }> {
  const op = decision(job.scenario, client, job.family);
  await Promise.all(Array.from({ length: job.lanes }, (_, lane) => op(lane, -1))); // warm-up: scripts loaded
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, job.startAt - Date.now())));
  const latencies = await closedLoop(job.lanes, performance.now() + job.seconds * 1000, op);
  const sample: number[] = [];
  for (let i = 0; i < SAMPLE && latencies.length > 0; i++) sample.push(latencies[Math.floor(Math.random() * latencies.length)]!);
  return { count: latencies.length, sample };
}

process.send!("ready");
