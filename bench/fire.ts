/**
 * The fire endpoint, up to the run being queued: requests per second and
 * p50/p99 latency with a valid token and with invalid ones, beside a bare
 * Elysia route served by the same process in the same run. Target: token
 * checking and queueing cost at most 2x the bare route.
 *
 * The load comes from a separate process (bench/_load-generator.ts), as wrk or
 * oha would send it, so the client's own work is not counted against the
 * server. Two load levels: 1 request in flight (the latency one caller sees)
 * and 16 in flight (the server's thread saturated, so p50 is in effect its
 * cost per request). Loopback only, bounded loops; nothing is asserted.
 *
 * The fired workflow's pool has one worker held by a long first run, so every
 * later run waits in the queue: what is measured is the fire path, not the runs.
 */
import { Elysia } from "elysia";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../src/config.ts";
import { startHatch } from "../src/main.ts";
import { generateLoad, type LoadResult } from "./_load-generator.ts";

/** Requests in flight: one caller alone, then enough to keep the server's thread busy. */
const LOAD_LEVELS = [1, 16];
/** Requests per scenario before measuring (JIT, SQLite page cache). */
const WARMUP = 500;
/** Requests measured per scenario. */
const REQUESTS = 5000;
/** Runs of the whole set: the median is printed, so one noisy pass does not decide. */
const ROUNDS = 3;

interface Scenario {
  name: string;
  url: string;
  headers: Record<string, string>;
  body: string;
  expect: number;
}

const dataDir = mkdtempSync(join(tmpdir(), "hatch-bench-fire-"));
const hatch = await startHatch(loadConfig({ HATCH_PORT: "0", HATCH_COMPANION_PORT: "0", HATCH_DATA_DIR: dataDir }), {
  workflows: { poolSize: 1 },
  // The per-address cap stays in the path but never trips on loopback.
  fireRatePerMinute: 100_000_000,
});
const bare = new Elysia().post("/bare", () => ({ ok: true })).listen({ port: 0, hostname: "127.0.0.1" });
try {
  const { platform, workflows } = hatch;
  const owner = await platform.users.create("bench@example.com", "bench password");
  const project = platform.projects.create("bench", "Bench", owner.id);
  workflows.limits.set(project.id, { runsPerDay: 100_000_000, tokensPerDay: 100_000_000 });
  const workflow = workflows.workflows.create({ projectId: project.id, createdBy: owner.id, name: "bench", mode: "fresh", runner: { kind: "command", command: "sleep 3600", timeoutSeconds: 3600 } });
  const { WebhookTokens } = await import("../src/fire/index.ts");
  const { token } = new WebhookTokens(workflows.triggers).issue(workflow.id);
  const fireUrl = `${hatch.url}/api/webhooks/workflow/${workflow.id}/fire`;
  const json = { "content-type": "application/json" };
  const body = JSON.stringify({ text: "benchmark fire" });
  const scenarios: Scenario[] = [
    { name: "bare Elysia route", url: `http://127.0.0.1:${bare.server!.port}/bare`, headers: json, body, expect: 200 },
    { name: "fire, valid token (queued)", url: fireUrl, headers: { ...json, authorization: `Bearer ${token}` }, body, expect: 202 },
    { name: "fire, wrong token", url: fireUrl, headers: { ...json, authorization: `Bearer wfk1_${"x".repeat(43)}` }, body, expect: 401 },
    { name: "fire, malformed token", url: fireUrl, headers: { ...json, authorization: "Bearer nope" }, body, expect: 401 },
    { name: "fire, unknown workflow", url: `${hatch.url}/api/webhooks/workflow/wf-unknown/fire`, headers: { ...json, authorization: `Bearer ${token}` }, body, expect: 401 },
  ];
  const median = (list: LoadResult[]) => [...list].sort((a, b) => a.p50 - b.p50)[Math.floor(list.length / 2)]!;
  for (const concurrency of LOAD_LEVELS) {
    const results = new Map<string, LoadResult[]>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const scenario of scenarios) {
        const list = results.get(scenario.name) ?? [];
        list.push(await generateLoad({ ...scenario, warmup: WARMUP, requests: REQUESTS, concurrency }));
        results.set(scenario.name, list);
      }
    }
    const baseline = median(results.get(scenarios[0]!.name)!);
    console.log(`\n${REQUESTS} requests x ${ROUNDS} rounds, ${concurrency} in flight, load from another process, loopback (median round)`);
    console.log("scenario                        req/s     p50 ms   p99 ms   p50 vs bare");
    for (const scenario of scenarios) {
      const r = median(results.get(scenario.name)!);
      console.log(`${scenario.name.padEnd(30)} ${r.rps.toFixed(0).padStart(7)}   ${r.p50.toFixed(3).padStart(7)}  ${r.p99.toFixed(3).padStart(7)}   ${(r.p50 / baseline.p50).toFixed(2)}x`);
    }
  }
  console.log(`runs queued by the valid-token scenario: ${workflows.pool.stats().queued} (one held running by design)`);
  const commits = workflows.runs.commitStats();
  console.log(`run rows written in ${commits.commits} group commits, ${(commits.writes / commits.commits).toFixed(1)} rows each on average`);
} finally {
  await bare.stop(true);
  await hatch.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
