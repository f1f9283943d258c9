import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fireTokenMatches, isFireTokenShaped, mintFireToken } from "../../src/fire/index.ts";
import { MAX_WEBHOOK_TRIGGERS } from "../../src/workflows/index.ts";
import { startWorld } from "../helpers/world.ts";
import { commandWorkflow, fire, issueToken, waitForRun } from "../helpers/workflows.ts";

describe("fire tokens", () => {
  test("a token is wfk1_ plus 32 random bytes; only a salted hash is kept, no part of the token", async () => {
    const a = mintFireToken();
    const b = mintFireToken();
    expect(a.token).toMatch(/^wfk1_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(a.token.slice(5), "base64url").length).toBe(32);
    expect(a.token).not.toBe(b.token);
    expect(a.stored.salt).not.toBe(b.stored.salt);
    expect(a.stored.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(Object.keys(a.stored).sort()).toEqual(["hash", "salt"]);
    expect(fireTokenMatches(a.token, a.stored.salt, a.stored.hash)).toBe(true);
    expect(fireTokenMatches(b.token, a.stored.salt, a.stored.hash)).toBe(false);
    expect(isFireTokenShaped(a.token)).toBe(true);
    expect(isFireTokenShaped(a.token + "x")).toBe(false);
  });

  test("the token is shown once at creation and never again: not by any route, not in the database files", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo hi");
    const { token, triggerId } = await issueToken(member.client, workflow.id);
    const views = [await member.client.get(`/api/workflows/${workflow.id}`), await member.client.get(`/api/workflows/${workflow.id}/triggers`), await member.client.get("/api/workflows")];
    // Any part of the random bytes: the first six (what a "hint" would keep) and the rest.
    const parts = [token.slice(5, 11), token.slice(11)];
    for (const view of views) for (const part of parts) expect(JSON.stringify(view.body)).not.toContain(part);
    expect(views[1]!.body.triggers).toEqual([{ id: triggerId, workflowId: workflow.id, kind: "webhook", bindingId: null, createdAt: expect.any(Number), rotatedAt: null, revokedAt: null }]);
    world.hatch.sqlite.run("PRAGMA wal_checkpoint(TRUNCATE)");
    for (const file of readdirSync(world.config.dataDir).filter((f) => f.startsWith("hatch.db"))) {
      for (const part of parts) expect(readFileSync(join(world.config.dataDir, file)).includes(part)).toBe(false);
    }
  });

  test("rotating makes the old token 401 at once and the new one fire", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo rotated");
    const old = await issueToken(member.client, workflow.id);
    const before = await fire(world, workflow.id, old.token);
    expect(before.status).toBe(202);
    await waitForRun(member.client, workflow.id, before.body.runId);

    const rotated = await member.client.post(`/api/workflows/${workflow.id}/triggers/${old.triggerId}/rotate`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.trigger).toMatchObject({ id: old.triggerId, rotatedAt: expect.any(Number), revokedAt: null });
    expect((await fire(world, workflow.id, old.token)).status).toBe(401);
    const after = await fire(world, workflow.id, rotated.body.token);
    expect(after.status).toBe(202);
    expect((await waitForRun(member.client, workflow.id, after.body.runId)).trigger.id).toBe(old.triggerId);
  });

  test("a workflow holds at most 10 live webhook triggers: the 11th is refused with 409 too_many_triggers; revoking one makes room", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "cat");
    const issued = [];
    for (let i = 0; i < MAX_WEBHOOK_TRIGGERS; i++) issued.push(await issueToken(member.client, workflow.id));
    const refused = await member.client.post(`/api/workflows/${workflow.id}/triggers`, { kind: "webhook" });
    expect({ status: refused.status, code: refused.body.error.code }).toEqual({ status: 409, code: "too_many_triggers" });
    expect(refused.body.token).toBeUndefined();
    expect((await member.client.get(`/api/workflows/${workflow.id}`)).body.triggers.filter((t: { revokedAt: number | null }) => t.revokedAt === null)).toHaveLength(MAX_WEBHOOK_TRIGGERS);
    expect((await member.client.delete(`/api/workflows/${workflow.id}/triggers/${issued[0]!.triggerId}`)).status).toBe(200);
    const { token } = await issueToken(member.client, workflow.id);
    expect((await fire(world, workflow.id, token)).status).toBe(202);
  });

  test("a revoked trigger cannot be rotated or revoked again; another member's workflow looks absent", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const other = await world.signedIn(project, "member");
    const workflow = await commandWorkflow(member, "echo hi");
    const { triggerId } = await issueToken(member.client, workflow.id);
    expect((await other.client.post(`/api/workflows/${workflow.id}/triggers`, { kind: "webhook" })).status).toBe(404);
    expect((await other.client.post(`/api/workflows/${workflow.id}/triggers/${triggerId}/rotate`)).status).toBe(404);
    expect((await member.client.delete(`/api/workflows/${workflow.id}/triggers/${triggerId}`)).body.trigger.revokedAt).toEqual(expect.any(Number));
    expect((await member.client.post(`/api/workflows/${workflow.id}/triggers/${triggerId}/rotate`)).status).toBe(404);
    expect((await member.client.delete(`/api/workflows/${workflow.id}/triggers/${triggerId}`)).status).toBe(404);
    expect((await member.client.post(`/api/workflows/${workflow.id}/triggers`, { kind: "message" })).status).toBe(400);
  });

  test("a channel binding's message trigger cannot be rotated or revoked through the trigger routes", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo hi");
    const trigger = world.hatch.workflows.triggers.addMessage(workflow.id, "binding-1");
    const revoke = await member.client.delete(`/api/workflows/${workflow.id}/triggers/${trigger.id}`);
    expect(revoke.status).toBe(409);
    expect(revoke.body.error.code).toBe("trigger_system_managed");
    expect((await member.client.post(`/api/workflows/${workflow.id}/triggers/${trigger.id}/rotate`)).status).toBe(409);
    expect(world.hatch.workflows.triggers.byBinding("binding-1")).toEqual(trigger);
  });
});
