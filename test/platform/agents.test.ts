import { describe, expect, test } from "bun:test";
import { startWorld } from "../helpers/world.ts";

describe("agents", () => {
  test("a user may use their own agents and shared ones, never another member's private agent or another project's", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const other = await world.project();
    const alice = await world.signedIn(project, "member");
    const bob = await world.signedIn(project, "member");
    const mine = world.agent(project, alice.user);
    const shared = world.agent(project, bob.user, { shared: true });
    const bobs = world.agent(project, bob.user);
    const foreign = world.agent(other, other.owner, { shared: true });
    const { agents } = world.platform;
    expect(agents.usable(project.id, alice.user.id, mine.id)?.id).toBe(mine.id);
    expect(agents.usable(project.id, alice.user.id, shared.id)?.id).toBe(shared.id);
    expect(agents.usable(project.id, alice.user.id, bobs.id)).toBeNull();
    expect(agents.usable(project.id, alice.user.id, foreign.id)).toBeNull();
    expect(agents.usable(project.id, alice.user.id, "no-such-agent")).toBeNull();
    const listed = (await alice.client.get("/api/agents")).body.agents.map((a: { id: string }) => a.id).sort();
    expect(listed).toEqual([mine.id, shared.id].sort());
  });

  test("members create agents; viewers cannot; a duplicate name gets 409", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const viewer = await world.signedIn(project, "viewer");
    expect((await member.client.post("/api/agents", { name: "helper" })).status).toBe(201);
    expect((await member.client.post("/api/agents", { name: "helper" })).status).toBe(409);
    expect((await viewer.client.post("/api/agents", { name: "other" })).status).toBe(403);
    expect((await member.client.post("/api/agents", {})).status).toBe(400);
  });
});
