/** Shared settings of the concurrency test and its worker processes. */
export const LOAD = {
  windowLimit: 20,
  windowMs: 200,
  smoothLimit: 150,
  smoothBurst: 5,
  maxPermits: 3,
  maxWaitMs: 1500,
} as const;
