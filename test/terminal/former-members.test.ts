import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { FORMER_MEMBER_REASON } from "../../src/terminal/former-members.ts";
import { hatchCli } from "../helpers/cli.ts";
import { attached, createSession, localSource, openTerminal, runAndSee, TERMINAL } from "../helpers/terminal.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { startWorld, type World } from "../helpers/world.ts";

/** A world where neither periodic check (view re-check, reaper) comes during a test unless asked for. */
const world = (periodic: { accessRecheckMs?: number; reaperIntervalMs?: number } = {}) =>
  startWorld({}, { accessRecheckMs: 3_600_000, reaperIntervalMs: 3_600_000, ...periodic });

/** `hatch admin member remove`, run as the operator runs it: a separate platform on the same data dir, so the running server hears of it only through the database. */
async function removeMember(world: World, projectSlug: string, email: string): Promise<void> {
  const removed = await hatchCli(world.config.dataDir, ["admin", "member", "remove", "--project", projectSlug, "--email", email]);
  expect({ code: removed.code, err: removed.err }).toEqual({ code: 0, err: "" });
}

/** As a member with rwx on source docs, open session "s" there and attach to it. */
async function memberAttachedToDocs(world: World) {
  const project = await world.project();
  const member = await world.signedIn(project, "member");
  localSource(world, project, "docs", { member: "rwx" });
  expect((await createSession(member.client, { sourceSlug: "docs", id: "s" })).status).toBe(201);
  const terminal = await attached(world, member, "s");
  await runAndSee(terminal, "echo before-$((1+1))", "before-2");
  return { project, member, terminal };
}

describe("a member removed with hatch admin member remove", () => {
  test("loses their open view at its next keystroke (4401, the key does not run); exec, create and a new attach are refused; they stay signed in", async () => {
    await using w = await world();
    const { project, member, terminal } = await memberAttachedToDocs(w);
    await removeMember(w, project.slug, member.user.email);

    const marker = join(w.tempDir("marker"), "after-removal");
    terminal.type(`touch ${marker}\r`);
    expect(await terminal.closed).toBe(4401);
    expect(existsSync(marker)).toBe(false);
    const exec = await member.client.post(`${TERMINAL}/sessions/s/exec`, { command: `touch ${marker}` });
    const create = await createSession(member.client, { sourceSlug: "docs", id: "another" });
    expect([exec, create].map((r) => ({ status: r.status, code: r.body.error?.code }))).toEqual([
      { status: 403, code: "no_project" },
      { status: 403, code: "no_project" },
    ]);
    expect(existsSync(marker)).toBe(false);
    expect(await (await openTerminal(w, member, "s")).closed).toBe(4401);
    // Signed in still (they may belong to other projects), but the project they had chosen grants nothing, and cannot be chosen again.
    const me = await member.client.get("/api/auth/me");
    expect({ status: me.status, project: me.body.project, role: me.body.role, features: me.body.features, projects: me.body.projects }).toEqual({
      status: 200,
      project: null,
      role: null,
      features: [],
      projects: [],
    });
    const back = await member.client.post("/api/auth/project", { project: project.slug });
    expect({ status: back.status, code: back.body.error?.code }).toEqual({ status: 404, code: "project_not_found" });
  });

  test("loses a view that only watches at the server's periodic re-check (4401), without sending anything", async () => {
    await using w = await world({ accessRecheckMs: 100 });
    const { project, member, terminal } = await memberAttachedToDocs(w);
    await removeMember(w, project.slug, member.user.email);
    expect(await terminal.closed).toBe(4401);
  });

  test("has their sessions in that project ended at the server's next check, audited, with a supervisor watching told why; their sessions elsewhere live on", async () => {
    await using w = await world({ reaperIntervalMs: 100 });
    const project = await w.project();
    const member = await w.signedIn(project, "member");
    const owner = await w.signedIn(project, "owner");
    localSource(w, project, "docs", { member: "rwx" });
    const agent = w.agent(project, member.user);
    expect((await createSession(member.client, { sourceSlug: "docs", id: "s" })).status).toBe(201);
    expect((await createSession(member.client, { sourceSlug: "docs", id: "a", agentId: agent.id })).status).toBe(201);
    // The same person in another project, with a session there.
    const elsewhere = await w.project();
    w.platform.projects.setMember(elsewhere.id, member.user.id, "member");
    localSource(w, elsewhere, "docs", { member: "rwx" });
    expect((await member.client.post("/api/auth/project", { project: elsewhere.slug })).status).toBe(200);
    expect((await createSession(member.client, { sourceSlug: "docs", id: "kept" })).status).toBe(201);
    const supervisor = await attached(w, owner, "s", { userId: member.user.id });

    await removeMember(w, project.slug, member.user.email);

    const { sessions } = w.hatch.terminal;
    // Each end is audited once its processes are gone.
    const ended = await waitFor(() => {
      const entries = w.platform.audit.query({ projectId: project.id, action: "terminal.terminate" });
      return entries.length === 2 ? entries : null;
    }, "both of the removed member's sessions to end");
    expect(sessions.listProject(project.id)).toEqual([]);
    expect((await supervisor.control("exit")).reason).toBe(FORMER_MEMBER_REASON);
    expect(await supervisor.closed).toBe(4000);
    expect(ended.map(({ userId, agentId, target, detail }) => ({ userId, agentId, target, detail })).sort((x, y) => x.target!.localeCompare(y.target!))).toEqual([
      { userId: member.user.id, agentId: agent.id, target: "a", detail: { sessionUserId: member.user.id, reason: "owner_not_a_member" } },
      { userId: member.user.id, agentId: null, target: "s", detail: { sessionUserId: member.user.id, reason: "owner_not_a_member" } },
    ]);
    // Their sign-in and their other project are untouched.
    const mine = await member.client.get(`${TERMINAL}/sessions`);
    expect({ status: mine.status, ids: mine.body.sessions?.map((s: { id: string }) => s.id) }).toEqual({ status: 200, ids: ["kept"] });
    expect(sessions.listProject(elsewhere.id).map((s) => s.id)).toEqual(["kept"]);
  });
});
