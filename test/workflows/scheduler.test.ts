import { describe, expect, test } from "bun:test";
import { waitFor } from "../helpers/wait-for.ts";
import { startWorld } from "../helpers/world.ts";
import { answers, commandWorkflow, countRows } from "../helpers/workflows.ts";

/** Every second (croner's 6-field form): the shortest schedule, so the test waits about a second. */
const EVERY_SECOND = "* * * * * *";

describe("the scheduler", () => {
  test("a cron schedule fires the workflow in-process; pausing or going manual stops it; deleting forgets it", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo tick", { schedule: EVERY_SECOND, mode: "fresh" });
    const { scheduler } = world.hatch.workflows;
    expect(scheduler.scheduledIds()).toEqual([workflow.id]);
    const run = await waitFor(async () => (await member.client.get(`/api/workflows/${workflow.id}/runs?status=succeeded`)).body.runs[0], "a scheduled run");
    expect(run).toMatchObject({ trigger: { id: null, kind: "schedule" }, input: { text: null, source: { kind: "schedule", schedule: EVERY_SECOND } } });
    expect(answers(run)).toEqual(["tick"]);

    await member.client.request("PATCH", `/api/workflows/${workflow.id}`, { status: "paused" });
    expect(scheduler.scheduledIds()).toEqual([]);
    await member.client.request("PATCH", `/api/workflows/${workflow.id}`, { status: "active", schedule: "manual" });
    expect(scheduler.scheduledIds()).toEqual([]);
    await member.client.request("PATCH", `/api/workflows/${workflow.id}`, { schedule: "0 9 * * *" });
    expect(scheduler.scheduledIds()).toEqual([workflow.id]);
    await member.client.delete(`/api/workflows/${workflow.id}`);
    expect(scheduler.scheduledIds()).toEqual([]);
  });

  test("a scheduled fire past the spend limit records no run and is audited", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    await owner.client.put("/api/workflows/spend-limit", { runsPerDay: 0, tokensPerDay: 0 });
    const workflow = await commandWorkflow(owner, "echo tick", { schedule: EVERY_SECOND });
    const refusal = await waitFor(() => world.platform.audit.query({ projectId: project.id, action: "workflow.fire.refused" })[0], "a refused scheduled fire");
    expect(refusal).toMatchObject({ target: workflow.id, detail: { code: "spend_limit_reached", limit: "runs", trigger: "schedule" } });
    expect(countRows(world, "workflow_runs")).toBe(0);
  });
});
