import { describe, expect, test } from "bun:test";
import { drizzle } from "drizzle-orm/bun-sqlite";
import * as schema from "../../src/db/schema.ts";
import { Audit } from "../../src/platform/index.ts";
import { startWorld } from "../helpers/world.ts";

describe("the audit log", () => {
  test("admins read their project's entries filtered by action and time, newest first", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const other = await world.project();
    const admin = await world.signedIn(project, "admin");
    // The same log over the same database, on a clock the test moves: every entry's `at` is known exactly.
    let now = 1_700_000_000_000;
    const audit = new Audit(world.platform.db, () => now);
    audit.write({ action: "terminal.session", userId: admin.user.id, projectId: project.id, agentId: null, target: "s1", detail: { event: "attach" } });
    const middle = (now += 1000);
    audit.write({ action: "terminal.blocked", userId: admin.user.id, projectId: project.id, target: "s1", detail: { reason: "fork bomb" } });
    audit.write({ action: "terminal.session", projectId: other.id, target: "elsewhere" });
    const attach = { action: "terminal.session", userId: admin.user.id, projectId: project.id, agentId: null, target: "s1", detail: { event: "attach" }, at: middle - 1000 };
    const blocked = { action: "terminal.blocked", userId: admin.user.id, projectId: project.id, agentId: null, target: "s1", detail: { reason: "fork bomb" }, at: middle };

    const all = (await admin.client.get("/api/audit")).body.entries;
    expect(all).toEqual([expect.objectContaining(blocked), expect.objectContaining(attach)]);
    const sessions = (await admin.client.get("/api/audit?action=terminal.session")).body.entries;
    expect(sessions).toEqual([expect.objectContaining(attach)]);
    expect((await admin.client.get(`/api/audit?since=${middle}`)).body.entries).toEqual([expect.objectContaining(blocked)]);
    expect((await admin.client.get(`/api/audit?until=${middle - 1}`)).body.entries).toEqual([expect.objectContaining(attach)]);
    expect((await admin.client.get(`/api/audit?since=${middle - 1000}&until=${middle}`)).body.entries).toEqual([expect.objectContaining(blocked), expect.objectContaining(attach)]);
    expect((await admin.client.get(`/api/audit?until=${middle - 100000}`)).body.entries).toEqual([]);
  });

  test("pages follow the last entry's id (before=), so entries sharing one millisecond beyond a page are all reached, once each", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const admin = await world.signedIn(project, "admin");
    const audit = new Audit(world.platform.db, () => 1_700_000_000_000);
    for (const target of ["first", "second", "third", "fourth", "fifth"]) audit.write({ action: "terminal.terminate", projectId: project.id, target });
    const seen: string[] = [];
    let before = "";
    for (let page = 0; page < 5; page++) {
      const entries = (await admin.client.get(`/api/audit?action=terminal.terminate&limit=2${before}`)).body.entries as { id: number; target: string }[];
      if (entries.length === 0) break;
      seen.push(...entries.map((e) => e.target));
      before = `&before=${entries.at(-1)!.id}`;
    }
    expect(seen).toEqual(["fifth", "fourth", "third", "second", "first"]);
    expect((await admin.client.get("/api/audit?before=0")).status).toBe(400);
  });

  test("members cannot read the audit log; a bad filter gets 400", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const admin = await world.signedIn(project, "admin");
    expect((await member.client.get("/api/audit")).status).toBe(403);
    const bad = await admin.client.get("/api/audit?since=yesterday");
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain("since");
  });
});

describe("reading a page of a long audit log", () => {
  test("a page of one project's, one action's or the server-wide entries is read in id order from an index, never by sorting all of them", async () => {
    await using world = await startWorld();
    const project = await world.project();
    // The same log over the same database, with every query it sends captured.
    const sent: { sql: string; params: unknown[] }[] = [];
    const logged = drizzle(world.hatch.sqlite, { schema, logger: { logQuery: (sql, params) => void sent.push({ sql, params }) } });
    const audit = new Audit(logged);
    const plans = [{ projectId: project.id }, { projectId: null }, { action: "terminal.session" }, { projectId: project.id, since: 1, before: 100 }].map((query) => {
      sent.length = 0;
      audit.query({ ...query, limit: 1 });
      const [{ sql, params }] = sent as [{ sql: string; params: unknown[] }];
      const plan = world.hatch.sqlite.query(`EXPLAIN QUERY PLAN ${sql}`).all(...(params as string[])) as { detail: string }[];
      return { query, plan: plan.map((step) => step.detail).join("; ") };
    });
    // A sort would show as "USE TEMP B-TREE FOR ORDER BY"; a scan of the whole log as "SCAN audit_log".
    expect(plans.filter(({ plan }) => /TEMP B-TREE|SCAN audit_log\b(?! USING)/.test(plan))).toEqual([]);
    expect(plans.map(({ plan }) => /USING (COVERING )?INDEX audit_(project|action)_id/.test(plan))).toEqual([true, true, true, true]);
  });
});
