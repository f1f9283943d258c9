import { describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { HatchError } from "../../src/platform/index.ts";
import type { RunUpdate } from "../../src/workflows/index.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { startWorld } from "../helpers/world.ts";
import { commandWorkflow, countRows, memberWithBareRuns, traceDir } from "../helpers/workflows.ts";

const peer = { id: "4242", displayName: "Ada L." };

describe("what the channels part builds on", () => {
  test("a binding attaches a system-managed message trigger; schedule edits never touch it; only removing the binding removes it", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo hi");
    const other = await commandWorkflow(member, "echo other");
    const { triggers } = world.hatch.workflows;
    const trigger = triggers.addMessage(workflow.id, "binding-1");
    expect(trigger).toEqual({ id: expect.stringMatching(/^tr-/), workflowId: workflow.id, kind: "message", bindingId: "binding-1", createdAt: expect.any(Number), rotatedAt: null, revokedAt: null });
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

  test("with the agent package switched off for the creator's role a run ends cancelled / package-off without running; granting the feature restores it", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const member = await memberWithBareRuns(world, project);
    const traces = traceDir(world);
    const workflow = await commandWorkflow(member, `touch ${traces}/ran-$HATCH_RUN_ID; echo hi`, { mode: "fresh" });
    world.hatch.workflows.triggers.addMessage(workflow.id, "binding-pkg");
    const message = { bindingId: "binding-pkg", text: "hi", platform: "telegram", peer, linkedUser: { id: member.user.id, email: member.user.email } };
    const outcomeOf = async () => {
      const outcome = Promise.withResolvers<RunUpdate>();
      const run = await world.hatch.workflows.engine.fireMessage({ ...message, onUpdate: (u) => u.type === "finished" && outcome.resolve(u) });
      return { run, update: await outcome.promise };
    };

    expect((await owner.client.put("/api/packages/agent/access", { feature: "agent.use" })).status).toBe(200);
    const off = await outcomeOf();
    expect(off.update).toMatchObject({ type: "finished", outcome: { kind: "package-off" } });
    expect(world.hatch.workflows.runs.get(off.run.id)).toMatchObject({
      status: "cancelled",
      cancelled: "package-off",
      error: "The agent package was switched off for the creator's role when this run's turn came",
      startedAt: null,
    });
    expect(existsSync(join(traces, `ran-${off.run.id}`))).toBe(false);

    expect((await owner.client.put("/api/roles/member/features/agent.use")).status).toBe(200);
    const on = await outcomeOf();
    expect(on.update).toMatchObject({ outcome: { kind: "succeeded" } });
    expect(existsSync(join(traces, `ran-${on.run.id}`))).toBe(true);
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

  test("a subscriber reading the delivery policy at each answer, as delivery does, sees announce turned off mid-run", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await memberWithBareRuns(world, project);
    const traces = traceDir(world);
    const answer = (text: string) => `echo '{"type":"answer","text":"${text}"}'`;
    const workflow = await commandWorkflow(member, `${answer("first")}; while [ ! -e ${traces}/go ]; do sleep 0.02; done; ${answer("second")}`, { announce: true });
    const { workflows, engine } = world.hatch.workflows;
    const announcedAt: Record<string, boolean | undefined> = {};
    const finished = Promise.withResolvers<void>();
    await engine.fire({
      workflowId: workflow.id,
      trigger: { id: null, kind: "manual" },
      source: { kind: "manual", userId: member.user.id, email: member.user.email },
      onUpdate: (u) => {
        if (u.type === "event" && u.event.type === "answer") announcedAt[u.event.text] = workflows.get(workflow.id)?.announce;
        if (u.type === "finished") finished.resolve();
      },
    });
    await waitFor(() => "first" in announcedAt, "the first answer");
    expect((await member.client.request("PATCH", `/api/workflows/${workflow.id}`, { announce: false })).status).toBe(200);
    writeFileSync(join(traces, "go"), "");
    await finished.promise;
    expect(announcedAt).toEqual({ first: true, second: false });
  });
});
