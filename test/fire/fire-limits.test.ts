import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config.ts";
import { startHatch } from "../../src/main.ts";
import { logIn, startWorld, TEST_PASSWORD } from "../helpers/world.ts";
import { commandWorkflow, countRows, createWorkflow, fire, issueToken, waitForRun } from "../helpers/workflows.ts";

const BAD_TOKEN = "wfk1_" + "C".repeat(43);

describe("limits of the fire endpoint", () => {
  test("the per-address cap answers 429 with Retry-After; X-Forwarded-For is ignored unless the peer is a trusted proxy", async () => {
    await using world = await startWorld({}, { fireRatePerMinute: 3 });
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo hi");
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await fire(world, workflow.id, BAD_TOKEN, {}, { "x-forwarded-for": `198.51.100.${i}` })).status);
    expect(statuses).toEqual([401, 401, 401, 429]);
    const capped = await fire(world, workflow.id, BAD_TOKEN);
    expect(capped.body.error.code).toBe("rate_limited");
    expect(Number(capped.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(countRows(world, "workflow_runs")).toBe(0);
  });

  test("the cap holds over any minute: a burst late in the limiter's window does not let another minute's worth through right after it", async () => {
    let clock = Date.now();
    await using world = await startWorld({}, { now: () => clock });
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo hi");
    const answered: number[] = [];
    const at = async (ms: number) => {
      clock = ms;
      const status = (await fire(world, workflow.id, BAD_TOKEN)).status;
      if (status !== 429) answered.push(ms);
      return status;
    };
    const start = clock;
    await at(start);
    for (let i = 0; i < 59; i++) await at(start + 59_900);
    // One fire a second from then on: the minute before each of them already holds 60 answered fires, bar the first.
    const later: number[] = [];
    for (let s = 61; s <= 70; s++) later.push(await at(start + s * 1000));
    const mostInAMinute = Math.max(...answered.map((t) => answered.filter((u) => u > t - 60_000 && u <= t).length));
    expect({ later, mostInAMinute }).toEqual({ later: [401, 429, 429, 429, 429, 429, 429, 429, 429, 429], mostInAMinute: 60 });
  });

  test("behind a trusted proxy each client address has its own cap", async () => {
    await using world = await startWorld({ HATCH_TRUSTED_PROXIES: "127.0.0.1" }, { fireRatePerMinute: 2 });
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo hi");
    const from = (address: string) => fire(world, workflow.id, BAD_TOKEN, {}, { "x-forwarded-for": `${address}, 127.0.0.1` });
    expect([(await from("203.0.113.7")).status, (await from("203.0.113.7")).status, (await from("203.0.113.7")).status]).toEqual([401, 401, 429]);
    expect((await from("203.0.113.8")).status).toBe(401);
    // A client cannot dodge the cap by prepending addresses: the proxy appends the real one.
    expect((await fire(world, workflow.id, BAD_TOKEN, {}, { "x-forwarded-for": "192.0.2.1, 203.0.113.7" })).status).toBe(429);
    // Nor by walking through the 2^64 addresses of its IPv6 /64; the next /64 is another client.
    expect([(await from("2001:db8:1:2::a")).status, (await from("2001:db8:1:2::b")).status, (await from("2001:db8:1:2:ffff::c")).status]).toEqual([401, 401, 429]);
    expect((await from("2001:db8:1:3::a")).status).toBe(401);
  });

  test("a fire past the project's runs-per-day limit is refused with 429 spend_limit_reached and recorded in the audit log", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const member = await world.signedIn(project, "member");
    const workflow = await commandWorkflow(member, "echo ok");
    const { token } = await issueToken(member.client, workflow.id);

    expect((await member.client.put("/api/workflows/spend-limit", { runsPerDay: 2, tokensPerDay: 100 })).status).toBe(403);
    expect((await owner.client.put("/api/workflows/spend-limit", { runsPerDay: -1, tokensPerDay: 100 })).body.error.code).toBe("invalid_spend_limit");
    const set = await owner.client.put("/api/workflows/spend-limit", { runsPerDay: 2, tokensPerDay: 100 });
    expect(set.body).toEqual({ runsPerDay: 2, tokensPerDay: 100, used: { runs: 0, tokens: 0 } });

    for (let i = 0; i < 2; i++) {
      const fired = await fire(world, workflow.id, token, { text: `fire ${i}` });
      expect(fired.status).toBe(202);
      await waitForRun(member.client, workflow.id, fired.body.runId);
    }
    const refused = await fire(world, workflow.id, token, { text: "one too many" });
    expect(refused.status).toBe(429);
    expect(refused.body.error).toEqual({ code: "spend_limit_reached", message: "The project's spend limit of 2 runs per day is reached" });
    expect(countRows(world, "workflow_runs")).toBe(2);
    const audit = world.platform.audit.query({ projectId: project.id, action: "workflow.fire.refused" });
    expect(audit.map((e) => ({ target: e.target, detail: e.detail }))).toEqual([
      { target: workflow.id, detail: { code: "spend_limit_reached", limit: "runs", trigger: "webhook" } },
    ]);
    expect((await member.client.get("/api/workflows/spend-limit")).body.used).toEqual({ runs: 2, tokens: 0 });
  });

  test("a fire refused by the spend limit says in Retry-After when the day's window frees a run, and fires then; the kill switch (0) says no time", async () => {
    const HOUR = 3600_000;
    // Ten minutes into an hour, so the runs below all fall in one hour's count.
    const clock = { now: Math.floor(Date.now() / HOUR) * HOUR + 10 * 60_000 };
    await using world = await startWorld({}, { now: () => clock.now });
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const workflow = await commandWorkflow(owner, "echo ok");
    const { token } = await issueToken(owner.client, workflow.id);
    await owner.client.put("/api/workflows/spend-limit", { runsPerDay: 2, tokensPerDay: 100 });
    const firedHour = Math.floor(clock.now / HOUR);
    for (let i = 0; i < 2; i++) await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: `fire ${i}` })).body.runId);
    // Two hours later the two runs still count: they leave the window as the 25th hour after theirs begins.
    clock.now += 2 * HOUR;
    const refused = await fire(world, workflow.id, token, { text: "one too many" });
    const frees = (firedHour + 25) * HOUR;
    expect({ status: refused.status, code: refused.body.error.code, retryAfter: refused.headers.get("retry-after") }).toEqual({ status: 429, code: "spend_limit_reached", retryAfter: String(Math.ceil((frees - clock.now) / 1000)) });
    clock.now = frees - 1000;
    expect((await fire(world, workflow.id, token, { text: "a second early" })).status).toBe(429);
    clock.now = frees;
    expect((await fire(world, workflow.id, token, { text: "on time" })).status).toBe(202);
    await owner.client.put("/api/workflows/spend-limit", { runsPerDay: 0, tokensPerDay: 0 });
    const stopped = await fire(world, workflow.id, token, { text: "kill switch" });
    expect({ status: stopped.status, retryAfter: stopped.headers.get("retry-after") }).toEqual({ status: 429, retryAfter: null });
  });

  test("deleting a workflow does not give its project back what its runs spent, even after a restart", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "hatch-spend-restart-"));
    const config = loadConfig({ HATCH_PORT: "0", HATCH_COMPANION_PORT: "0", HATCH_DATA_DIR: dataDir });
    try {
      {
        await using first = await startHatch(config);
        const user = await first.platform.users.create("owner@example.com", TEST_PASSWORD);
        first.platform.projects.create("spend", "Spend", user.id);
        const owner = await logIn(first.url, "owner@example.com", "spend");
        await owner.put("/api/workflows/spend-limit", { runsPerDay: 2, tokensPerDay: 100 });
        const spent = await createWorkflow(owner, { name: "Spent", runner: { kind: "command", command: "echo ok" } });
        for (let i = 0; i < 2; i++) await waitForRun(owner, spent.id, (await owner.post(`/api/workflows/${spent.id}/runs`, {})).body.id);
        expect((await owner.delete(`/api/workflows/${spent.id}`)).status).toBe(200);
        expect((await owner.get("/api/workflows/spend-limit")).body.used).toEqual({ runs: 2, tokens: 0 });
      }
      await using second = await startHatch(config);
      const owner = await logIn(second.url, "owner@example.com", "spend");
      // The day's two runs still count, though their rows went with their workflow.
      expect((await owner.get("/api/workflows/spend-limit")).body.used).toEqual({ runs: 2, tokens: 0 });
      const fresh = await createWorkflow(owner, { name: "Fresh", runner: { kind: "command", command: "echo ok" } });
      const refused = await owner.post(`/api/workflows/${fresh.id}/runs`, {});
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe("spend_limit_reached");
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test("a spend limit of zero stops every fire, manual runs included", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const workflow = await commandWorkflow(owner, "echo ok");
    await owner.client.put("/api/workflows/spend-limit", { runsPerDay: 0, tokensPerDay: 0 });
    const manual = await owner.client.post(`/api/workflows/${workflow.id}/runs`, { text: "now" });
    expect(manual.status).toBe(429);
    expect(countRows(world, "workflow_runs")).toBe(0);
  });
});
