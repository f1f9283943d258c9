import { describe, expect, test } from "bun:test";
import { hatchCli } from "../helpers/cli.ts";
import { createSession, TERMINAL } from "../helpers/terminal.ts";
import { startWorld } from "../helpers/world.ts";

const valuesOf = (settings: { key: string; value: number }[]) => Object.fromEntries(settings.map((s) => [s.key, s.value]));

describe("platform settings", () => {
  test("admins read every setting with its default", async () => {
    await using world = await startWorld();
    const admin = await world.signedIn(await world.project(), "admin");
    const response = await admin.client.get("/api/settings");
    expect(response.status).toBe(200);
    expect(valuesOf(response.body.settings)).toEqual({
      terminalMaxSessions: 8,
      terminalScrollbackLines: 10000,
      terminalExecTimeoutSeconds: 30,
      terminalExecOutputCapBytes: 65536,
      terminalIdleShutdownMinutes: 60,
      channelInboundFiresPerMinute: 30,
    });
    expect(new Set(response.body.settings.map((s: { scope: string }) => s.scope))).toEqual(new Set(["default"]));
  });

  test("an admin's change is their project's own: stored, read back at use time and audited, and no other project's", async () => {
    await using world = await startWorld();
    const project = await world.project("mine");
    const other = await world.project("other");
    const owner = await world.signedIn(project, "owner");
    const theirs = await world.signedIn(other, "owner");
    const changed = await owner.client.put("/api/settings/terminalMaxSessions", { value: 1 });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ key: "terminalMaxSessions", value: 1, scope: "project", default: 8 });
    expect(world.platform.settings.get("terminalMaxSessions", project.id)).toBe(1);
    // Used at the next create: the project's second session is refused; the other project's is not.
    expect((await createSession(owner.client, { sourceSlug: "container-root", id: "a" })).status).toBe(201);
    expect((await createSession(owner.client, { sourceSlug: "container-root", id: "b" })).status).toBe(429);
    for (const id of ["a", "b"]) expect((await createSession(theirs.client, { sourceSlug: "container-root", id })).status).toBe(201);
    expect((await theirs.client.get("/api/settings")).body.settings.find((s: { key: string }) => s.key === "terminalMaxSessions")).toMatchObject({ value: 8, scope: "default" });
    expect(world.platform.settings.get("terminalMaxSessions", null)).toBe(8);

    expect((await owner.client.put("/api/settings/channelInboundFiresPerMinute", { value: 0 })).status).toBe(200);
    const audit = await owner.client.get("/api/audit?action=settings.update");
    expect(audit.body.entries.map((e: { target: string }) => e.target)).toEqual(["channelInboundFiresPerMinute", "terminalMaxSessions"]);
    expect((await theirs.client.get("/api/audit?action=settings.update")).body.entries).toEqual([]);
  });

  test("a project without its own value takes the operator's server-wide one; DELETE drops the project's own", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const admin = await world.signedIn(project, "admin");
    const fromCli = await hatchCli(world.config.dataDir, ["admin", "setting", "set", "terminalExecTimeoutSeconds", "90", "--json"]);
    expect(fromCli.json()).toMatchObject({ value: 90, scope: "server" });
    const timeout = async () => (await admin.client.get("/api/settings")).body.settings.find((s: { key: string }) => s.key === "terminalExecTimeoutSeconds");
    expect(await timeout()).toMatchObject({ value: 90, scope: "server" });
    await admin.client.put("/api/settings/terminalExecTimeoutSeconds", { value: 5 });
    expect(await timeout()).toMatchObject({ value: 5, scope: "project" });

    const dropped = await admin.client.delete("/api/settings/terminalExecTimeoutSeconds");
    expect(dropped.status).toBe(200);
    expect(dropped.body).toMatchObject({ key: "terminalExecTimeoutSeconds", value: 90, scope: "server" });
    expect(await timeout()).toMatchObject({ value: 90, scope: "server" });
    // Dropping what is not set changes nothing, says what is in force, and records nothing.
    expect((await admin.client.delete("/api/settings/terminalExecTimeoutSeconds")).body).toMatchObject({ value: 90, scope: "server" });
    const audit = await admin.client.get("/api/audit?action=settings.clear");
    expect(audit.body.entries.map((e: { target: string; detail: unknown }) => [e.target, e.detail])).toEqual([["terminalExecTimeoutSeconds", { value: 90, scope: "server" }]]);
    // So does the CLI: one server-wide value dropped, then nothing to drop.
    expect((await hatchCli(world.config.dataDir, ["admin", "setting", "unset", "terminalExecTimeoutSeconds", "--json"])).json()).toMatchObject({ value: 30, scope: "default" });
    expect((await hatchCli(world.config.dataDir, ["admin", "setting", "unset", "terminalExecTimeoutSeconds", "--json"])).json()).toMatchObject({ value: 30, scope: "default" });
    expect(world.platform.audit.query({ action: "settings.clear" }).filter((e) => e.projectId === null)).toHaveLength(1);
    expect((await admin.client.delete("/api/settings/noSuchSetting")).body.error.code).toBe("unknown_setting");
  });

  test("a negative, absurd or non-integer value gets 400 and changes nothing", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const admin = await world.signedIn(project, "admin");
    for (const value of [-1, 0, 1_000_000, 2.5, "8", null]) {
      const response = await admin.client.put("/api/settings/terminalMaxSessions", { value });
      expect(response.status).toBe(400);
      expect(response.body.error.code).toBe("invalid_setting");
    }
    expect((await admin.client.put("/api/settings/noSuchSetting", { value: 1 })).body.error.code).toBe("unknown_setting");
    expect((await admin.client.put("/api/settings/terminalMaxSessions", "{not json")).status).toBe(400);
    expect(world.platform.settings.get("terminalMaxSessions", project.id)).toBe(8);
  });

  test("members and viewers cannot read, change or drop settings", async () => {
    await using world = await startWorld();
    const project = await world.project();
    await (await world.signedIn(project, "owner")).client.put("/api/settings/terminalMaxSessions", { value: 3 });
    for (const role of ["member", "viewer", "manager"]) {
      const person = await world.signedIn(project, role);
      expect((await person.client.get("/api/settings")).status).toBe(403);
      expect((await person.client.put("/api/settings/terminalMaxSessions", { value: 2 })).status).toBe(403);
      expect((await person.client.delete("/api/settings/terminalMaxSessions")).status).toBe(403);
    }
    expect(world.platform.settings.get("terminalMaxSessions", project.id)).toBe(3);
  });

  test("each project's Idle Shutdown reaps its own sessions, and its exec settings apply to its sessions", async () => {
    let now = Date.now();
    await using world = await startWorld({}, { now: () => now, reaperIntervalMs: 3_600_000 });
    const quick = await world.project("quick");
    const slow = await world.project("slow");
    const a = await world.signedIn(quick, "owner");
    const b = await world.signedIn(slow, "owner");
    await a.client.put("/api/settings/terminalIdleShutdownMinutes", { value: 5 });
    await a.client.put("/api/settings/terminalExecOutputCapBytes", { value: 1024 });
    for (const person of [a, b]) expect((await createSession(person.client, { sourceSlug: "container-root", id: "s" })).status).toBe(201);
    const long = "head -c 3000 /dev/zero | tr '\\0' x";
    expect((await a.client.post(`${TERMINAL}/sessions/s/exec`, { command: long })).body).toMatchObject({ output: "x".repeat(1024), truncated: true });
    expect((await b.client.post(`${TERMINAL}/sessions/s/exec`, { command: long })).body).toMatchObject({ output: "x".repeat(3000), truncated: false });
    now += 6 * 60_000;
    expect(await world.hatch.terminal.sessions.sweep()).toEqual(["s"]);
    expect(world.hatch.terminal.sessions.listProject(quick.id)).toEqual([]);
    expect(world.hatch.terminal.sessions.listProject(slow.id)).toHaveLength(1);
  });
});
