import { describe, expect, test } from "bun:test";
import { HatchError } from "../../src/platform/index.ts";
import type { RunUpdate } from "../../src/workflows/index.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { startWorld } from "../helpers/world.ts";
import { commandWorkflow, countRows } from "../helpers/workflows.ts";

const peer = { id: "4242", displayName: "Ada L." };

describe("what the channels part builds on", () => {
  test("a binding attaches a system-managed message trigger; schedule edits never touch it; only removing the binding removes it", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo hi");
    const other = await commandWorkflow(member, "echo other");
    const { triggers } = world.hatch.workflows;
    const trigger = triggers.addMessage(workflow.id, "binding-1");
    expect(trigger).toEqual({ id: expect.stringMatching(/^tr-/), workflowId: workflow.id, kind: "message", tokenHint: null, bindingId: "binding-1", createdAt: expect.any(Number), rotatedAt: null, revokedAt: null });
    expect(triggers.addMessage(workflow.id, "binding-1")).toEqual(trigger);
    expect(() => triggers.addMessage(other.id, "binding-1")).toThrow(HatchError);

    for (const schedule of ["*/5 * * * *", "manual"]) {
      expect((await member.client.request("PATCH", `/api/workflows/${workflow.id}`, { schedule })).status).toBe(200);
      expect((await member.client.get(`/api/workflows/${workflow.id}/triggers`)).body.triggers).toEqual([trigger]);
    }
    const refused = await member.client.delete(`/api/workflows/${workflow.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe("workflow_bound");

    expect(triggers.removeMessage("binding-1")).toBe(true);
    expect(triggers.removeMessage("binding-1")).toBe(false);
    expect((await member.client.delete(`/api/workflows/${workflow.id}`)).status).toBe(200);
  });

  test("a message fires with its source line and streams every event, then the outcome, to the subscriber", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, `grep '^source:'; echo '{"type":"note","text":"thinking"}'`);
    const trigger = world.hatch.workflows.triggers.addMessage(workflow.id, "binding-7");
    const updates: RunUpdate[] = [];
    const run = await world.hatch.workflows.engine.fireMessage({
      bindingId: "binding-7",
      text: "hello bot",
      platform: "telegram",
      peer,
      linkedUser: { id: member.user.id, email: member.user.email },
      onUpdate: (u) => updates.push(u),
    });
    expect(run).toMatchObject({ status: "queued", trigger: { id: trigger.id, kind: "message" }, input: { text: "hello bot", source: { kind: "message", platform: "telegram", peer } } });
    await waitFor(() => updates.some((u) => u.type === "finished"), "the run to finish");
    const sourceLine = `source: platform "telegram", peer "4242" ("Ada L."), linked user "${member.user.email}" ("${member.user.id}")`;
    expect(updates.map((u) => (u.type === "event" ? { [u.event.type]: u.event.text } : u.type === "status" ? u.status : u.outcome))).toEqual([
      "running",
      { note: "thinking" },
      { answer: sourceLine },
      { kind: "succeeded" },
    ]);
    expect(updates.every((u) => u.run.id === run.id && u.run.trigger.kind === "message")).toBe(true);
  });

  test("a failed run reports its real error to the subscriber (for the row and audit), a paused workflow refuses with workflow_not_active, an unknown binding with 404", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "exit 9");
    world.hatch.workflows.triggers.addMessage(workflow.id, "binding-9");
    const message = { bindingId: "binding-9", text: "hi", platform: "whatsapp", peer, linkedUser: { id: member.user.id, email: member.user.email } };
    const outcomes: RunUpdate[] = [];
    await world.hatch.workflows.engine.fireMessage({ ...message, onUpdate: (u) => u.type === "finished" && outcomes.push(u) });
    await waitFor(() => outcomes.length === 1, "the outcome");
    expect(outcomes[0]).toMatchObject({ outcome: { kind: "failed", error: "The command exited with code 9" } });

    await member.client.request("PATCH", `/api/workflows/${workflow.id}`, { status: "paused" });
    const refusal = await world.hatch.workflows.engine.fireMessage(message).catch((error: HatchError) => error);
    expect(refusal).toMatchObject({ code: "workflow_not_active", status: 409, detail: { status: "paused" } });
    await expect(world.hatch.workflows.engine.fireMessage({ ...message, bindingId: "nope" })).rejects.toThrow("no message trigger");
    expect(countRows(world, "workflow_runs")).toBe(1);
  });

  test("a channel message may be longer than the fire endpoint's 4,000 characters, up to 40,000; a run by hand may not", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "wc -c");
    world.hatch.workflows.triggers.addMessage(workflow.id, "binding-long");
    const message = { bindingId: "binding-long", platform: "telegram", peer, linkedUser: { id: member.user.id, email: member.user.email } };
    // Two Telegram messages of 4,096 characters coalesced into one fire.
    const coalesced = await world.hatch.workflows.engine.fireMessage({ ...message, text: "m".repeat(8192) });
    expect(coalesced).toMatchObject({ status: "queued", input: { text: "m".repeat(8192) } });
    const tooLong = await world.hatch.workflows.engine.fireMessage({ ...message, text: "😀".repeat(40_001) }).catch((error: HatchError) => error);
    expect(tooLong).toMatchObject({ code: "text_too_long", status: 400, message: 'Cannot fire: "text" must be at most 40000 characters' });

    const byHand = await member.client.post(`/api/workflows/${workflow.id}/runs`, { text: "h".repeat(4001) });
    expect({ status: byHand.status, code: byHand.body.error.code }).toEqual({ status: 400, code: "text_too_long" });
    expect(countRows(world, "workflow_runs")).toBe(1);
  });

  test("the delivery policy is read from the workflow, so turning announce off applies to the next answer", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo hi", { announce: true });
    expect(world.hatch.workflows.workflows.get(workflow.id)?.announce).toBe(true);
    await member.client.request("PATCH", `/api/workflows/${workflow.id}`, { announce: false });
    expect(world.hatch.workflows.workflows.get(workflow.id)?.announce).toBe(false);
  });
});
