import { describe, expect, test } from "bun:test";
import { startWorld } from "../helpers/world.ts";

describe("the audit log", () => {
  test("admins read their project's entries filtered by action and time, newest first", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const other = await world.project();
    const admin = await world.signedIn(project, "admin");
    const { audit } = world.platform;
    audit.write({ action: "terminal.session", userId: admin.user.id, projectId: project.id, agentId: null, target: "s1", detail: { event: "attach" } });
    const middle = Date.now();
    audit.write({ action: "terminal.blocked", userId: admin.user.id, projectId: project.id, target: "s1", detail: { reason: "fork bomb" } });
    audit.write({ action: "terminal.session", projectId: other.id, target: "elsewhere" });

    const all = (await admin.client.get("/api/audit")).body.entries;
    expect(all.map((e: { target: string }) => e.target)).toEqual(["s1", "s1"]);
    const sessions = (await admin.client.get("/api/audit?action=terminal.session")).body.entries;
    expect(sessions).toEqual([
      expect.objectContaining({ action: "terminal.session", userId: admin.user.id, projectId: project.id, agentId: null, target: "s1", detail: { event: "attach" } }),
    ]);
    const since = (await admin.client.get(`/api/audit?since=${middle}`)).body.entries;
    expect(since.every((e: { at: number }) => e.at >= middle)).toBe(true);
    expect((await admin.client.get(`/api/audit?until=${middle - 100000}`)).body.entries).toEqual([]);
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
