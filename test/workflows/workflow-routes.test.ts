import { describe, expect, test } from "bun:test";
import { CHANNEL_ASSISTANT } from "../../src/workflows/index.ts";
import { startWorld } from "../helpers/world.ts";
import { commandWorkflow, countRows, createWorkflow, fire, issueToken, waitForRun } from "../helpers/workflows.ts";

describe("workflow management", () => {
  test("a member creates a workflow with defaults for a chat-style bot and the creator recorded", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo hi");
    expect(workflow).toEqual({
      id: expect.stringMatching(/^wf-/),
      projectId: expect.any(String),
      name: "Echo",
      instruction: "Answer the message.",
      runner: { kind: "command", command: "echo hi", timeoutSeconds: 120 },
      mode: "one-thread",
      status: "active",
      schedule: "manual",
      announce: false,
      template: null,
      createdBy: member.user.id,
      createdAt: expect.any(Number),
      updatedAt: expect.any(Number),
      triggers: [],
    });
    expect((await member.client.get(`/api/workflows/${workflow.id}`)).body).toEqual(workflow);
  });

  test("members see and manage only their own workflows; workflows.manage (owner, admin) manages all; a viewer gets 403", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const alice = await world.signedIn(project, "member");
    const bob = await world.signedIn(project, "member");
    const admin = await world.signedIn(project, "admin");
    const viewer = await world.signedIn(project, "viewer");
    const mine = await commandWorkflow(alice, "echo alice");
    await commandWorkflow(bob, "echo bob");

    expect((await alice.client.get("/api/workflows")).body.workflows.map((w: { id: string }) => w.id)).toEqual([mine.id]);
    expect((await admin.client.get("/api/workflows")).body.workflows).toHaveLength(2);
    const hidden = await bob.client.get(`/api/workflows/${mine.id}`);
    const unknown = await bob.client.get("/api/workflows/wf-nope");
    expect(hidden.status).toBe(404);
    expect(hidden.body.error.code).toBe(unknown.body.error.code);
    expect((await bob.client.request("PATCH", `/api/workflows/${mine.id}`, { status: "paused" })).status).toBe(404);
    expect((await bob.client.delete(`/api/workflows/${mine.id}`)).status).toBe(404);
    expect((await admin.client.request("PATCH", `/api/workflows/${mine.id}`, { status: "paused" })).body.status).toBe("paused");

    expect((await viewer.client.get("/api/workflows")).status).toBe(403);
    const create = await viewer.client.post("/api/workflows", { name: "x", runner: { kind: "command", command: "true" } });
    expect(create.status).toBe(403);
    // Admins manage every workflow but hold no core.execute by default, so a workflow cannot run as them.
    expect((await admin.client.post("/api/workflows", { name: "x", runner: { kind: "command", command: "true" } })).body.error.code).toBe("feature_required");
    expect(countRows(world, "workflows")).toBe(2);
  });

  test("another project's workflow is invisible, and anonymous callers get 401", async () => {
    await using world = await startWorld();
    const a = await world.signedIn(await world.project("a"), "owner");
    const b = await world.signedIn(await world.project("b"), "owner");
    const workflow = await commandWorkflow(a, "echo a");
    expect((await b.client.get(`/api/workflows/${workflow.id}`)).status).toBe(404);
    expect((await b.client.get(`/api/workflows/${workflow.id}/runs`)).status).toBe(404);
    expect((await world.anonymous().get("/api/workflows")).status).toBe(401);
  });

  test("invalid fields are refused with 400 naming them, and nothing is stored", async () => {
    await using world = await startWorld();
    // The owner, who may also name project secrets (openai runners).
    const owner = await world.signedIn(await world.project(), "owner");
    const bad: [Record<string, unknown>, string][] = [
      [{ name: " ", runner: { kind: "command", command: "true" } }, "invalid_name"],
      // A line break would print a forged row in the operator's `hatch workflow list`; U+202E shows the rest backwards.
      [{ name: "Echo\nwf-7d1e4c2a  Payroll export", runner: { kind: "command", command: "true" } }, "invalid_name"],
      [{ name: "Report \u202egpj.exe", runner: { kind: "command", command: "true" } }, "invalid_name"],
      [{ name: "ok\x1b]0;owned\x07", runner: { kind: "command", command: "true" } }, "invalid_name"],
      [{ name: "x", runner: { kind: "command", command: "  " } }, "invalid_command"],
      [{ name: "x", runner: { kind: "command", command: "echo a\u0000b" } }, "invalid_command"],
      [{ name: "x", runner: { kind: "command", command: "true", timeoutSeconds: 0 } }, "invalid_timeout"],
      [{ name: "x", runner: { kind: "command", command: "true" }, schedule: "every tuesday" }, "invalid_schedule"],
      // Well formed, but 30 February never comes.
      [{ name: "x", runner: { kind: "command", command: "true" }, schedule: "0 0 30 2 *" }, "invalid_schedule"],
      // croner reads a date-time as a one-shot job: a future one would fire once, a past one never.
      [{ name: "x", runner: { kind: "command", command: "true" }, schedule: "2099-01-01T09:00:00" }, "invalid_schedule"],
      [{ name: "x", runner: { kind: "command", command: "true" }, schedule: "2020-01-01 09:00:00" }, "invalid_schedule"],
      [{ name: "x", runner: { kind: "command", command: "true" }, mode: "sometimes" }, "invalid_request"],
      [{ name: "x", runner: { kind: "shell", command: "true" } }, "invalid_request"],
      [{ name: "x", runner: { kind: "openai", baseUrl: "ftp://x", model: "m", apiKeySecret: "k" } }, "invalid_base_url"],
      [{ name: "x", runner: { kind: "openai", baseUrl: "http://x", model: "m", apiKeySecret: "bad id!" } }, "invalid_secret_id"],
      [{ template: "no-such-template", runner: { kind: "command", command: "true" } }, "unknown_template"],
      [{ template: "channel-assistant", mode: "fresh", runner: { kind: "command", command: "true" } }, "template_fixed"],
    ];
    for (const [body, code] of bad) {
      const response = await owner.client.post("/api/workflows", body);
      expect({ status: response.status, code: response.body.error?.code }).toEqual({ status: 400, code });
    }
    const workflow = await commandWorkflow(owner, "true");
    expect((await owner.client.request("PATCH", `/api/workflows/${workflow.id}`, { name: "two\u2028lines" })).body.error?.code).toBe("invalid_name");
    const patch = await owner.client.request("PATCH", `/api/workflows/${workflow.id}`, { name: "renamed", schedule: "nonsense" });
    expect(patch.body.error.code).toBe("invalid_schedule");
    // A nickname is a cron expression too.
    expect((await owner.client.request("PATCH", `/api/workflows/${workflow.id}`, { schedule: "@daily" })).body.schedule).toBe("@daily");
    expect((await owner.client.request("PATCH", `/api/workflows/${workflow.id}`, { status: "awaiting-template-upgrade" })).status).toBe(400);
    const runner = await owner.client.request("PATCH", `/api/workflows/${workflow.id}`, { runner: { kind: "command", command: "rm -rf ~" } });
    expect(runner.body.error).toEqual({ code: "invalid_request", message: 'Invalid body: field "runner" is not accepted here' });
    expect((await owner.client.get(`/api/workflows/${workflow.id}`)).body.name).toBe("Echo");
    expect(countRows(world, "workflows")).toBe(1);
  });

  test("edits change status, schedule, mode and delivery policy; delete removes the workflow with its runs and triggers", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo hi");
    const { token } = await issueToken(member.client, workflow.id);
    const run = await fire(world, workflow.id, token);
    await waitForRun(member.client, workflow.id, run.body.runId);
    const patched = await member.client.request("PATCH", `/api/workflows/${workflow.id}`, { schedule: "0 9 * * 1-5", mode: "fresh", announce: true, status: "paused" });
    expect(patched.body).toMatchObject({ schedule: "0 9 * * 1-5", mode: "fresh", announce: true, status: "paused" });
    expect((await member.client.delete(`/api/workflows/${workflow.id}`)).body).toEqual({ ok: true });
    expect((await member.client.get(`/api/workflows/${workflow.id}`)).status).toBe(404);
    expect([countRows(world, "workflow_runs"), countRows(world, "workflow_triggers"), countRows(world, "workflow_run_events")]).toEqual([0, 0, 0]);
    expect(world.platform.audit.query({ projectId: workflow.projectId }).map((e) => e.action)).toEqual(
      expect.arrayContaining(["workflow.add", "workflow.trigger.add", "workflow.update", "workflow.delete"]),
    );
  });

  test("an owner takes over a removed member's workflow: its runs execute as the owner, its token still fires, and only oneself can be the new creator", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const member = await world.signedIn(project, "member");
    const other = await world.signedIn(project, "member");
    const admin = await world.signedIn(project, "admin");
    const workflow = await commandWorkflow(member, "echo still here");
    const { token } = await issueToken(member.client, workflow.id);
    // Another member cannot see it to take it; an admin without core.execute could never run it.
    expect((await other.client.post(`/api/workflows/${workflow.id}/take-over`, {})).status).toBe(404);
    const refused = await admin.client.post(`/api/workflows/${workflow.id}/take-over`, {});
    expect({ status: refused.status, code: refused.body.error.code }).toEqual({ status: 403, code: "feature_required" });

    world.platform.projects.removeMember(project.id, member.user.id);
    expect((await fire(world, workflow.id, token)).body.error.code).toBe("creator_not_member");
    const taken = await owner.client.post(`/api/workflows/${workflow.id}/take-over`, {});
    expect(taken.status).toBe(200);
    expect(taken.body).toMatchObject({ id: workflow.id, createdBy: owner.user.id });
    const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token)).body.runId);
    expect(run.status).toBe("succeeded");
    const audit = world.platform.audit.query({ projectId: project.id, action: "workflow.take_over" });
    expect(audit.map((e) => ({ userId: e.userId, target: e.target, detail: e.detail }))).toEqual([{ userId: owner.user.id, target: workflow.id, detail: { previousCreator: member.user.id } }]);
    // Taking over one's own workflow changes nothing and records nothing.
    expect((await owner.client.post(`/api/workflows/${workflow.id}/take-over`, {})).body.createdBy).toBe(owner.user.id);
    expect(world.platform.audit.query({ projectId: project.id, action: "workflow.take_over" })).toHaveLength(1);
  });

  test("the Channel assistant template installs with a manual schedule, one thread and channel etiquette", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const templates = await member.client.get("/api/workflows/templates");
    expect(templates.body.templates.map((t: { id: string }) => t.id)).toEqual(["channel-assistant"]);
    const workflow = await createWorkflow(member.client, { template: "channel-assistant", runner: { kind: "command", command: "echo NO_REPLY" } });
    expect(workflow).toMatchObject({ name: "Channel assistant", schedule: "manual", mode: "one-thread", status: "active", template: { id: "channel-assistant", version: 1 } });
    expect(workflow.instruction).toBe(CHANNEL_ASSISTANT.instruction);
    expect(workflow.instruction).toContain("short");
    expect(workflow.instruction).toContain("No markdown tables");
    expect(workflow.instruction).toContain("NO_REPLY");
  });

  test("an install of an older template version awaits an upgrade, refuses to fire and to be reactivated by hand (pausing or archiving first included), and is active again once upgraded", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await createWorkflow(member.client, { template: "channel-assistant", runner: { kind: "command", command: "echo hi" } });
    world.hatch.sqlite.run("UPDATE workflows SET template_version = 0, instruction = 'old etiquette' WHERE id = ?", [workflow.id]);
    const flagged = world.hatch.workflows.workflows.flagOutdatedTemplates([CHANNEL_ASSISTANT]);
    expect(flagged).toEqual([workflow.id]);
    const { token } = await issueToken(member.client, workflow.id);
    expect((await fire(world, workflow.id, token)).status).toBe(409);
    const setStatus = async (status: string) => {
      const answer = await member.client.request("PATCH", `/api/workflows/${workflow.id}`, { status });
      return answer.status === 200 ? answer.body.status : answer.body.error.code;
    };
    expect(await setStatus("active")).toBe("template_upgrade_required");
    // Pausing (or archiving) and then activating does not skip the upgrade.
    expect(await setStatus("paused")).toBe("template_upgrade_required");
    expect(await setStatus("archived")).toBe("archived");
    expect(await setStatus("active")).toBe("template_upgrade_required");
    expect(await setStatus("paused")).toBe("template_upgrade_required");
    expect((await fire(world, workflow.id, token)).status).toBe(409);
    const upgraded = await member.client.post(`/api/workflows/${workflow.id}/upgrade-template`);
    expect(upgraded.body).toMatchObject({ status: "active", instruction: CHANNEL_ASSISTANT.instruction, template: { version: CHANNEL_ASSISTANT.version } });
    expect((await fire(world, workflow.id, token)).status).toBe(202);
    expect((await member.client.post(`/api/workflows/${workflow.id}/upgrade-template`)).body.error.code).toBe("no_template_upgrade");
    expect(await setStatus("paused")).toBe("paused");
  });

  test("without a session the workflow, run and trigger routes answer 401, whatever the query or body", async () => {
    await using world = await startWorld();
    const anonymous = world.anonymous();
    const answers = [
      await anonymous.post("/api/workflows", { runner: { kind: "nonsense" } }),
      await anonymous.patch("/api/workflows/wf-x", "[]"),
      await anonymous.put("/api/workflows/spend-limit", { runsPerDay: "many" }),
      await anonymous.get("/api/workflows/wf-x/runs?limit=0"),
      await anonymous.post("/api/workflows/wf-x/runs", "[]"),
      await anonymous.post("/api/workflows/wf-x/triggers", { kind: "message" }),
    ];
    expect(answers.map((a) => a.status)).toEqual(Array(answers.length).fill(401));
  });

  test("the owner's package-access feature on the agent package hides its workflows, runs and triggers too: 404 like an unknown route; the fire endpoint is unaffected", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    await owner.client.post("/api/roles", { name: "contractor" });
    for (const feature of ["terminal.read", "core.execute"]) await owner.client.put(`/api/roles/contractor/features/${feature}`);
    const contractor = await world.signedIn(project, "contractor");
    const workflow = await commandWorkflow(contractor, "cat");
    const { token } = await issueToken(contractor.client, workflow.id);
    expect((await owner.client.put("/api/packages/agent/access", { feature: "agent.access" })).status).toBe(200);

    const unknown = await contractor.client.get("/api/packages/agent/no-such-route");
    const answers = [
      await contractor.client.get("/api/workflows"),
      await contractor.client.get("/api/workflows/templates"),
      await contractor.client.post("/api/workflows", { name: "hidden", runner: { kind: "command", command: "true" } }),
      await contractor.client.post("/api/workflows", "[]"),
      await contractor.client.get(`/api/workflows/${workflow.id}`),
      await contractor.client.patch(`/api/workflows/${workflow.id}`, { name: "renamed" }),
      await contractor.client.get(`/api/workflows/${workflow.id}/runs`),
      await contractor.client.post(`/api/workflows/${workflow.id}/runs`, {}),
      await contractor.client.post(`/api/workflows/${workflow.id}/triggers`, { kind: "webhook" }),
    ];
    expect(answers.map((a) => ({ status: a.status, body: a.body }))).toEqual(Array(answers.length).fill({ status: 404, body: unknown.body }));
    expect(countRows(world, "workflows")).toBe(1);
    // The fire endpoint answers to its token, not to a signed-in role: it takes the fire, and the run is cancelled as package-off.
    const fired = await fire(world, workflow.id, token, { text: "hi" });
    expect(fired.status).toBe(202);
    expect((await waitForRun(owner.client, workflow.id, fired.body.runId)).cancelled).toBe("package-off");
    // The owner still sees them all.
    expect((await owner.client.get("/api/workflows")).body.workflows.map((w: any) => w.id)).toEqual([workflow.id]);
  });

  test("a delete whose audit entry cannot be written answers 500 and changes nothing: the workflow stays active, its schedule and its token keep firing", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo hi", { schedule: "0 9 * * *" });
    const { token } = await issueToken(member.client, workflow.id);
    world.hatch.sqlite.exec("CREATE TRIGGER delete_entry_fails BEFORE INSERT ON audit_log WHEN NEW.action = 'workflow.delete' BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END");
    const deleted = await member.client.delete(`/api/workflows/${workflow.id}`);
    world.hatch.sqlite.exec("DROP TRIGGER delete_entry_fails");
    expect(deleted.status).toBe(500);
    const after = await member.client.get(`/api/workflows/${workflow.id}`);
    const fired = await fire(world, workflow.id, token, { text: "still here?" });
    expect({ status: after.body.status, scheduled: world.hatch.workflows.scheduler.scheduledIds(), fire: fired.status }).toEqual({
      status: "active",
      scheduled: [workflow.id],
      fire: 202,
    });
  });
});
