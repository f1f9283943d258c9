import { describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { TERMINAL, createSession, localSource } from "../helpers/terminal.ts";
import { startWorld } from "../helpers/world.ts";

describe("exec in a session whose working directory was removed", () => {
  test("an unconfined session (Container Root) answers a client error, as a confined one does, not 500", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const member = await world.signedIn(project, "member");
    // Confined: the planner refuses the spawn with 400 root_invalid.
    const source = localSource(world, project, "docs", { member: "rwx" });
    mkdirSync(join(source.root, "sub"));
    expect((await createSession(member.client, { sourceSlug: "docs", id: "c", cwd: "sub" })).status).toBe(201);
    expect((await member.client.post(`${TERMINAL}/sessions/c/exec`, { command: "cd .. && rmdir sub && echo gone" })).body.output).toBe("gone\n");
    const confined = await member.client.post(`${TERMINAL}/sessions/c/exec`, { command: "echo hi" });
    expect(confined.status).toBe(400);

    // Unconfined: the same user action (the session removed its own working directory).
    const dir = world.tempDir("cwd");
    mkdirSync(join(dir, "x"));
    expect((await createSession(owner.client, { sourceSlug: "container-root", id: "r", cwd: join(dir, "x") })).status).toBe(201);
    expect((await owner.client.post(`${TERMINAL}/sessions/r/exec`, { command: "cd .. && rmdir x && echo gone" })).body.output).toBe("gone\n");
    const unconfined = await owner.client.post(`${TERMINAL}/sessions/r/exec`, { command: "echo hi" });
    expect({ status: unconfined.status, code: unconfined.body.error?.code }).toEqual({ status: confined.status, code: confined.body.error.code });
  });
});
