/**
 * HTTP load from a separate process, so the server's thread is not also the
 * client's. wrk is used when it is on PATH: written in C, it outruns a bare
 * Bun route (about 160k requests/s here). Without it the benchmarks fall back
 * to a Bun `fetch` client (bench/_fetch-load.ts), which tops out near 60k
 * requests/s on two cores: enough for a loaded fire, not for a bare route, so
 * its figures at high concurrency measure the client as much as the server.
 * The server's CPU time per request (taken by the benchmark around each run)
 * does not depend on the client, which is why the benchmarks print it too.
 */
import { fetchLoad } from "./_fetch-load.ts";
import { wrkLoad } from "./_wrk-load.ts";

/** One scenario of load: the request, the status every answer must have, and how wide. */
export interface LoadSpec {
  url: string;
  headers: Record<string, string>;
  body: string;
  expect: number;
  /** Requests kept in flight: each is sent again as soon as its answer is read. */
  concurrency: number;
  /** How much load: a number of requests (fetch client) or seconds (wrk). */
  amount: { requests: number; seconds: number };
}

/** What a run of load measured. */
export interface LoadResult {
  /** Requests answered in the run. */
  requests: number;
  rps: number;
  /** Latency percentiles, in milliseconds. */
  p50: number;
  p99: number;
}

/** A way to send load: its name (printed with the figures) and the run itself. */
export interface LoadGenerator {
  name: string;
  /** Which part of `LoadSpec.amount` it reads. */
  measures: "requests" | "seconds";
  /** Send the load and read back its figures; throws when an answer had another status than `expect`. */
  run(spec: LoadSpec): Promise<LoadResult>;
}

/** wrk when installed (`apt-get install -y wrk`), else the Bun fetch client. */
export function pickLoadGenerator(): LoadGenerator {
  const wrk = Bun.which("wrk");
  return wrk ? wrkLoad(wrk) : fetchLoad();
}
