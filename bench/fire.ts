/**
 * The fire endpoint, up to the run being queued: requests per second and
 * p50/p99 latency with a valid token and with invalid ones, beside a bare
 * Elysia route served by the same process in the same run. Loopback only,
 * bounded loops. Target: token checking and queueing cost at most 2x the bare route.
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

/** Requests in flight at once: enough to keep the server busy, few enough to stay on one core's queue. */
const CONCURRENCY = 16;
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

async function measure(scenario: Scenario, count: number): Promise<{ rps: number; p50: number; p99: number }> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next++ < count) {
      const t0 = performance.now();
      const response = await fetch(scenario.url, { method: "POST", headers: scenario.headers, body: scenario.body });
      await response.arrayBuffer();
      latencies.push(performance.now() - t0);
      if (response.status !== scenario.expect) throw new Error(`${scenario.name}: expected ${scenario.expect}, got ${response.status}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
  return { rps: count / seconds, p50: at(0.5), p99: at(0.99) };
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
  const results = new Map<string, { rps: number; p50: number; p99: number }[]>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const scenario of scenarios) {
      await measure(scenario, WARMUP);
      const list = results.get(scenario.name) ?? [];
      list.push(await measure(scenario, REQUESTS));
      results.set(scenario.name, list);
    }
  }
  const median = (list: { rps: number; p50: number; p99: number }[]) => [...list].sort((a, b) => a.p50 - b.p50)[Math.floor(list.length / 2)]!;
  const baseline = median(results.get(scenarios[0]!.name)!);
  console.log(`${REQUESTS} requests x ${ROUNDS} rounds, ${CONCURRENCY} in flight, loopback, one process (median round)`);
  console.log("scenario                        req/s     p50 ms   p99 ms   p50 vs bare");
  for (const scenario of scenarios) {
    const r = median(results.get(scenario.name)!);
    console.log(`${scenario.name.padEnd(30)} ${r.rps.toFixed(0).padStart(7)}   ${r.p50.toFixed(3).padStart(7)}  ${r.p99.toFixed(3).padStart(7)}   ${(r.p50 / baseline.p50).toFixed(2)}x`);
  }
  console.log(`runs queued by the valid-token scenario: ${workflows.pool.stats().queued} (one held running by design)`);
  const commits = workflows.runs.commitStats();
  console.log(`run rows written in ${commits.commits} group commits, ${(commits.writes / commits.commits).toFixed(1)} rows each on average`);
} finally {
  await bare.stop(true);
  await hatch.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
