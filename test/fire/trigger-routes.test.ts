import { describe, expect, test } from "bun:test";
import { KEPT_REVOKED_TRIGGERS } from "../../src/workflows/index.ts";
import { otherWriter } from "../helpers/other-writer.ts";
import { commandWorkflow, fire, issueToken } from "../helpers/workflows.ts";
import { startWorld } from "../helpers/world.ts";

describe("webhook trigger routes beside another process", () => {
  test("creating a webhook trigger while another process (the CLI) writes waits out the lock like every other write, never 500", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo hi");
    const statuses: number[] = [];
    {
      await using _writer = await otherWriter(world.config.dataDir);
      for (let i = 0; i < 10; i++) {
        const created = await member.client.post(`/api/workflows/${workflow.id}/triggers`, { kind: "webhook" });
        statuses.push(created.status);
        if (created.status === 201) await member.client.delete(`/api/workflows/${workflow.id}/triggers/${created.body.trigger.id}`);
      }
    }
    expect(statuses).toEqual(Array(10).fill(201));
  });
});

describe("revoked webhook triggers", () => {
  test("a workflow keeps its latest revoked triggers listed, not every one ever revoked; its live token still fires", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo hi");
    const { token, triggerId: live } = await issueToken(member.client, workflow.id);
    // A create-and-revoke loop: every revoked row was read by each fire and listed with the project's workflows.
    const revoked: string[] = [];
    for (let i = 0; i < KEPT_REVOKED_TRIGGERS + 5; i++) {
      const created = await member.client.post(`/api/workflows/${workflow.id}/triggers`, { kind: "webhook" });
      expect((await member.client.delete(`/api/workflows/${workflow.id}/triggers/${created.body.trigger.id}`)).status).toBe(200);
      revoked.push(created.body.trigger.id);
    }
    const listed: { id: string; revokedAt: number | null }[] = (await member.client.get(`/api/workflows/${workflow.id}/triggers`)).body.triggers;
    expect({
      live: listed.filter((t) => t.revokedAt === null).map((t) => t.id),
      revoked: listed.filter((t) => t.revokedAt !== null).map((t) => t.id).sort(),
    }).toEqual({ live: [live], revoked: revoked.slice(-KEPT_REVOKED_TRIGGERS).sort() });
    expect((await fire(world, workflow.id, token)).status).toBe(202);
    // Every revocation is still in the audit log.
    expect(world.platform.audit.query({ projectId: workflow.projectId, action: "workflow.trigger.revoke", limit: 100 }).length).toBe(KEPT_REVOKED_TRIGGERS + 5);
  });
});
