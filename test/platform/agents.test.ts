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

  test("the agent store belongs to the agent package: a role it is hidden from gets 404 on it, as on the terminal, whatever the body", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    world.agent(project, project.owner, { shared: true, name: "ops-bot" });
    expect((await owner.client.put("/api/packages/agent/access", { feature: "agent.access" })).status).toBe(200);
    const member = await world.signedIn(project, "member");
    const answers = await Promise.all([
      member.client.get("/api/agents"),
      member.client.post("/api/agents", { name: "sneaky" }),
      member.client.post("/api/agents", { name: 42 }),
      member.client.get("/api/packages/agent/terminal/health"),
    ]);
    expect(answers.map((a) => `${a.status} ${a.body?.error?.code}`)).toEqual(Array(4).fill("404 not_found"));
    expect(world.platform.agents.usableBy(project.id, member.user.id).map((a) => a.name)).toEqual(["ops-bot"]);
    // Granted the feature, the member sees the store again.
    world.platform.roles.grant(project.id, "member", "agent.access");
    expect((await member.client.get("/api/agents")).body.agents.map((a: { name: string }) => a.name)).toEqual(["ops-bot"]);
  });

  test("creating an agent needs terminal.read: members may, viewers and new custom roles may not until granted it; a duplicate name gets 409", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const viewer = await world.signedIn(project, "viewer");
    const owner = await world.signedIn(project, "owner");
    expect((await owner.client.post("/api/roles", { name: "auditor" })).status).toBe(201);
    const auditor = await world.signedIn(project, "auditor");
    expect((await member.client.post("/api/agents", { name: "helper" })).status).toBe(201);
    expect((await member.client.post("/api/agents", { name: "helper" })).status).toBe(409);
    for (const person of [viewer, auditor]) {
      const refused = await person.client.post("/api/agents", { name: "deploy-bot", shared: true });
      expect({ status: refused.status, code: refused.body.error.code }).toEqual({ status: 403, code: "feature_required" });
    }
    expect(world.platform.agents.usableBy(project.id, member.user.id).map((a) => a.name)).toEqual(["helper"]);
    expect((await owner.client.put("/api/roles/auditor/features/terminal.read")).status).toBe(200);
    expect((await auditor.client.post("/api/agents", { name: "deploy-bot" })).status).toBe(201);
    expect((await member.client.post("/api/agents", {})).status).toBe(400);
  });
});
