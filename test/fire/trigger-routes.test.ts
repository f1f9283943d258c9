import { describe, expect, test } from "bun:test";
import { otherWriter } from "../helpers/other-writer.ts";
import { commandWorkflow } from "../helpers/workflows.ts";
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
