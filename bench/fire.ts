/**
 * The fire endpoint, up to the run being queued: requests per second and
 * p50/p99 latency with a valid token and with invalid ones, beside a bare
 * Elysia route served by the same process in the same run. Target: token
 * checking and queueing cost at most 2x the bare route.
 *
 * The load comes from a separate process: wrk when it is installed, else a Bun
 * fetch client (bench/_load-generator.ts says why wrk is preferred). Two load
 * levels: 1 request in flight (the latency one caller sees) and 16 in flight
 * (enough to saturate the server's thread, given a client faster than the
 * server). Each scenario also prints the server's CPU time per request (this
 * process's user + system time over the run, divided by the requests
 * answered): the cost of a request, whatever client sends the load.
 * Loopback only, bounded loops; nothing is asserted.
 *
 * The fired workflow's pool has one worker held by a long first run, so every
 * later run waits in the queue: what is measured is the fire path, not the runs.
 *
 * Last, the SQLite steps of a valid fire are timed alone, in this process, so
 * the cost per request at 16 in flight can be read against its parts.
 */
import { Elysia } from "elysia";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../src/config.ts";
import { startHatch } from "../src/main.ts";
import { WebhookTokens } from "../src/fire/index.ts";
import type { WorkflowsPart } from "../src/workflows/index.ts";
import { pickLoadGenerator, type LoadSpec } from "./_load-generator.ts";

/** Requests in flight: one caller alone, then enough to keep the server's thread busy. */
const LOAD_LEVELS = [1, 16];
/** Load per scenario before measuring (JIT, SQLite page cache): requests for the fetch client, seconds for wrk. */
const WARMUP = { requests: 500, seconds: 1 };
/** Load measured per scenario and round. */
const MEASURED = { requests: 5000, seconds: 3 };
/** Runs of the whole set: the median is printed, so one noisy pass does not decide. */
const ROUNDS = 3;
/** Times each SQLite step of a fire is repeated when timed alone. */
const STEP_REPEATS = 20_000;
/** Rows per group commit when a step is timed alone: about what 16 in flight gives. */
const ROWS_PER_COMMIT = 8;

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
  const { token, trigger } = new WebhookTokens(workflows.triggers).issue(workflow.id);
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
  const generator = pickLoadGenerator();
  console.log(`load generator: ${generator.name}`);
  // wrk only tells 2xx from the rest, so each scenario's exact status is checked once here.
  for (const scenario of scenarios) {
    const answer = await fetch(scenario.url, { method: "POST", headers: scenario.headers, body: scenario.body });
    await answer.arrayBuffer();
    if (answer.status !== scenario.expect) throw new Error(`${scenario.name}: expected ${scenario.expect}, got ${answer.status}`);
  }
  /** Server CPU per request at the last load level. */
  let saturated = { bareUs: 0, validUs: 0 };
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  for (const concurrency of LOAD_LEVELS) {
    const figures = new Map<string, { rps: number[]; p50: number[]; p99: number[]; cpuUs: number[] }>();
    const commitsBefore = workflows.runs.commitStats();
    for (let round = 0; round < ROUNDS; round++) {
      for (const scenario of scenarios) {
        const spec: LoadSpec = { ...scenario, concurrency, amount: WARMUP };
        await generator.run(spec);
        const cpuBefore = process.cpuUsage();
        const result = await generator.run({ ...spec, amount: MEASURED });
        const cpu = process.cpuUsage(cpuBefore);
        const entry = figures.get(scenario.name) ?? { rps: [], p50: [], p99: [], cpuUs: [] };
        entry.rps.push(result.rps);
        entry.p50.push(result.p50);
        entry.p99.push(result.p99);
        entry.cpuUs.push((cpu.user + cpu.system) / result.requests);
        figures.set(scenario.name, entry);
      }
    }
    const of = (name: string) => {
      const entry = figures.get(name)!;
      return { rps: median(entry.rps), p50: median(entry.p50), p99: median(entry.p99), cpuUs: median(entry.cpuUs) };
    };
    const baseline = of(scenarios[0]!.name);
    const amount = generator.measures === "seconds" ? `${MEASURED.seconds} s` : `${MEASURED.requests} requests`;
    console.log(`\n${amount} x ${ROUNDS} rounds per scenario, ${concurrency} in flight, loopback (median of the rounds)`);
    console.log("scenario                        req/s     p50 ms   p99 ms   p50 vs bare   server CPU/req   vs bare");
    for (const scenario of scenarios) {
      const r = of(scenario.name);
      const cells = [
        scenario.name.padEnd(30),
        r.rps.toFixed(0).padStart(7),
        r.p50.toFixed(3).padStart(9),
        r.p99.toFixed(3).padStart(8),
        `${(r.p50 / baseline.p50).toFixed(2)}x`.padStart(13),
        `${r.cpuUs.toFixed(1)} µs`.padStart(16),
        `${(r.cpuUs / baseline.cpuUs).toFixed(2)}x`.padStart(9),
      ];
      console.log(cells.join(" "));
    }
    const commits = workflows.runs.commitStats();
    const rows = commits.writes - commitsBefore.writes;
    console.log(`run rows written: ${rows} in ${commits.commits - commitsBefore.commits} group commits, ${(rows / (commits.commits - commitsBefore.commits)).toFixed(1)} rows each on average`);
    saturated = { bareUs: baseline.cpuUs, validUs: of(scenarios[1]!.name).cpuUs };
  }
  console.log(`\nruns queued by the valid-token scenario: ${workflows.pool.stats().queued} (one held running by design)`);
  await printFireSteps({ workflows, workflowId: workflow.id, projectId: project.id, token, triggerId: trigger.id, saturated });
} finally {
  await bare.stop(true);
  await hatch.stop();
  rmSync(dataDir, { recursive: true, force: true });
}

/**
 * The SQLite steps of a valid fire, each timed alone in a loop (warm caches,
 * no HTTP): a lower bound of what each costs while the server is loaded.
 */
async function printFireSteps(options: { workflows: WorkflowsPart; workflowId: string; projectId: string; token: string; triggerId: string; saturated: { bareUs: number; validUs: number } }) {
  const { workflows, workflowId, projectId, token, triggerId } = options;
  const tokens = new WebhookTokens(workflows.triggers);
  const target = workflows.workflows.fireTarget(workflowId)!;
  const timed = (step: () => void) => {
    for (let i = 0; i < 1000; i++) step();
    const started = performance.now();
    for (let i = 0; i < STEP_REPEATS; i++) step();
    return ((performance.now() - started) * 1000) / STEP_REPEATS;
  };
  const tokenUs = timed(() => tokens.authenticate(workflowId, token));
  const readsUs = timed(() => {
    workflows.workflows.fireTarget(workflowId);
    workflows.limits.check(projectId, false);
  });
  const recorded: Promise<unknown>[] = [];
  const commitUs =
    timed(() => {
      for (let i = 0; i < ROWS_PER_COMMIT; i++) {
        recorded.push(workflows.runs.create({ workflow: target, trigger: { id: triggerId, kind: "webhook" }, text: "benchmark fire", source: { kind: "webhook", triggerId } }).recorded);
      }
      workflows.runs.flush();
    }) / ROWS_PER_COMMIT;
  await Promise.all(recorded);
  const { bareUs, validUs } = options.saturated;
  console.log(`\nthe SQLite steps of a valid fire, each alone in a loop (a lower bound under load):`);
  console.log(`  token check (trigger read and hash)       ${tokenUs.toFixed(1).padStart(6)} µs`);
  console.log(`  workflow and spend-limit reads            ${readsUs.toFixed(1).padStart(6)} µs`);
  console.log(`  run row, in commits of ${ROWS_PER_COMMIT} rows              ${commitUs.toFixed(1).padStart(6)} µs`);
  console.log(`server CPU per request at ${LOAD_LEVELS.at(-1)} in flight: bare ${bareUs.toFixed(1)} µs, valid fire ${validUs.toFixed(1)} µs`);
}
