import { describe, expect, test } from "bun:test";
import { startWorld } from "../helpers/world.ts";

describe("platform settings", () => {
  test("admins read every setting with its default", async () => {
    await using world = await startWorld();
    const admin = await world.signedIn(await world.project(), "admin");
    const response = await admin.client.get("/api/settings");
    expect(response.status).toBe(200);
    expect(Object.fromEntries(response.body.settings.map((s: { key: string; value: number }) => [s.key, s.value]))).toEqual({
      terminalMaxSessions: 8,
      terminalScrollbackLines: 10000,
      terminalExecTimeoutSeconds: 30,
      terminalExecOutputCapBytes: 65536,
      terminalIdleShutdownMinutes: 60,
      channelInboundFiresPerMinute: 30,
    });
  });

  test("a change is stored, read back at use time and audited", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const changed = await owner.client.put("/api/settings/terminalMaxSessions", { value: 3 });
    expect(changed.status).toBe(200);
    expect(changed.body.value).toBe(3);
    expect(world.platform.settings.get("terminalMaxSessions")).toBe(3);
    expect((await owner.client.put("/api/settings/channelInboundFiresPerMinute", { value: 0 })).status).toBe(200);
    const audit = await owner.client.get("/api/audit?action=settings.update");
    expect(audit.body.entries.map((e: { target: string }) => e.target)).toEqual(["channelInboundFiresPerMinute", "terminalMaxSessions"]);
  });

  test("a negative, absurd or non-integer value gets 400 and changes nothing", async () => {
    await using world = await startWorld();
    const admin = await world.signedIn(await world.project(), "admin");
    for (const value of [-1, 0, 1_000_000, 2.5, "8", null]) {
      const response = await admin.client.put("/api/settings/terminalMaxSessions", { value });
      expect(response.status).toBe(400);
      expect(response.body.error.code).toBe("invalid_setting");
    }
    expect((await admin.client.put("/api/settings/noSuchSetting", { value: 1 })).body.error.code).toBe("unknown_setting");
    expect((await admin.client.put("/api/settings/terminalMaxSessions", "{not json")).status).toBe(400);
    expect(world.platform.settings.get("terminalMaxSessions")).toBe(8);
  });

  test("members and viewers cannot read or change settings", async () => {
    await using world = await startWorld();
    const project = await world.project();
    for (const role of ["member", "viewer", "manager"]) {
      const person = await world.signedIn(project, role);
      expect((await person.client.get("/api/settings")).status).toBe(403);
      expect((await person.client.put("/api/settings/terminalMaxSessions", { value: 2 })).status).toBe(403);
    }
    expect(world.platform.settings.get("terminalMaxSessions")).toBe(8);
  });
});
