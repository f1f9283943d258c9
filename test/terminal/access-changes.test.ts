import { describe, expect, spyOn, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { attached, createSession, localSource, runAndSee, sessionAnAdminSupervises } from "../helpers/terminal.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { startWorld, type World } from "../helpers/world.ts";

/** The audit events of a session's terminal connections, oldest first. */
function sessionEvents(world: World, projectId: string): string[] {
  return world.platform.audit
    .query({ projectId, action: "terminal.session" })
    .map((entry) => entry.detail!.event as string)
    .reverse();
}

/** As a member with rwx on source docs, open session "s" there and attach to it. */
async function memberAttachedToDocs(world: World) {
  const project = await world.project();
  const member = await world.signedIn(project, "member");
  localSource(world, project, "docs", { member: "rwx" });
  await createSession(member.client, { sourceSlug: "docs", id: "s" });
  return { project, member, terminal: await attached(world, member, "s") };
}

describe("a connected view whose access changes", () => {
  test("is closed with 4401 at its next keystroke once its user logged out, and the keystroke does not run", async () => {
    await using world = await startWorld();
    const { project, member, terminal } = await memberAttachedToDocs(world);
    await runAndSee(terminal, "echo before-$((1+1))", "before-2");
    expect((await member.client.post("/api/auth/logout", {})).status).toBe(200);
    const marker = join(world.tempDir("marker"), "after-logout");
    terminal.type(`touch ${marker}\r`);
    expect(await terminal.closed).toBe(4401);
    expect(existsSync(marker)).toBe(false);
    await waitFor(() => sessionEvents(world, project.id).includes("detach"), "the detach audit entry");
    expect(sessionEvents(world, project.id)).toEqual(["attach", "access_lost", "detach"]);
  });

  test("is closed with 4403 at its next keystroke once the session's source narrowed for its owner", async () => {
    await using world = await startWorld();
    const { project, terminal } = await memberAttachedToDocs(world);
    await runAndSee(terminal, "echo before-$((1+2))", "before-3");
    world.hatch.terminal.sources.setEnabled(project.id, "docs", false);
    const marker = join(world.tempDir("marker"), "after-narrowing");
    terminal.type(`touch ${marker}\r`);
    expect(await terminal.closed).toBe(4403);
    expect(existsSync(marker)).toBe(false);
  });

  test("that only watches is closed within the re-check interval once its user lost the terminal, without sending anything", async () => {
    await using world = await startWorld({}, { accessRecheckMs: 100 });
    const { project, member, terminal } = await memberAttachedToDocs(world);
    world.platform.projects.setMember(project.id, member.user.id, "viewer");
    expect(await terminal.closed).toBe(4401);
  });

  describe("that only watches is closed at once by a change made through the API, with no periodic re-check to wait for", () => {
    /** A world whose periodic re-check never comes during a test: only the change itself can close a view. */
    const noPeriodicRecheck = () => startWorld({}, { accessRecheckMs: 3_600_000 });

    test("its supervisor's terminal.supervise revoked by the owner: 4404", async () => {
      await using world = await noPeriodicRecheck();
      const { project, member, admin } = await sessionAnAdminSupervises(world);
      const owner = await world.signedIn(project, "owner");
      const supervisor = await attached(world, admin, "s", { userId: member.user.id });
      expect((await owner.client.delete("/api/roles/admin/features/terminal.supervise")).status).toBe(200);
      expect(await supervisor.closed).toBe(4404);
    });

    test("its user signed out in another tab: 4401", async () => {
      await using world = await noPeriodicRecheck();
      const { member, terminal } = await memberAttachedToDocs(world);
      expect((await member.client.post("/api/auth/logout", {})).status).toBe(200);
      expect(await terminal.closed).toBe(4401);
    });

    test("its session's source disabled by an admin: 4403", async () => {
      await using world = await noPeriodicRecheck();
      const { project, terminal } = await memberAttachedToDocs(world);
      const admin = await world.signedIn(project, "admin");
      expect((await admin.client.patch("/api/sources/docs", { enabled: false })).status).toBe(200);
      expect(await terminal.closed).toBe(4403);
    });
  });

  test("decides again only for changes that can touch it: another project's user switching projects costs it nothing", async () => {
    await using world = await startWorld({}, { accessRecheckMs: 3_600_000 });
    const { project, member, terminal } = await memberAttachedToDocs(world);
    await runAndSee(terminal, "echo ready-$((1+1))", "ready-2");
    const elsewhere = await world.project();
    const stranger = await world.signedIn(elsewhere, "viewer");
    // Project routes resolve callers with resolveInProject too, but a project switch does not: every call here is a view's decision.
    const decisions = spyOn(world.platform.callers, "resolveInProject");
    for (let i = 0; i < 20; i++) expect((await stranger.client.post("/api/auth/project", { project: elsewhere.slug })).status).toBe(200);
    await Bun.sleep(100);
    expect(decisions).toHaveBeenCalledTimes(0);
    // The member's own switch (to the same project) is decided on, and the view stays.
    expect((await member.client.post("/api/auth/project", { project: project.slug })).status).toBe(200);
    await waitFor(() => decisions.mock.calls.length > 0, "the member's view to decide again");
    await runAndSee(terminal, "echo still-$((2+2))", "still-4");
    decisions.mockRestore();
  });

  test("becomes read-only once its user lost core.execute: it is told so, the lease passes on and its keys are dropped", async () => {
    await using world = await startWorld();
    const { project, member, admin } = await sessionAnAdminSupervises(world);
    const mine = await attached(world, member, "s");
    const supervisor = await attached(world, admin, "s", { userId: member.user.id });
    supervisor.send({ type: "takeControl" });
    await mine.control("lease", (c) => c.userId === admin.user.id);
    await runAndSee(supervisor, "echo supervised-$((2+3))", "supervised-5");
    world.platform.roles.revoke(project.id, "admin", "core.execute");
    const marker = join(world.tempDir("marker"), "after-demotion");
    supervisor.type(`touch ${marker}\r`);
    await supervisor.control("readOnly");
    await mine.control("lease", (c) => c.you === true);
    await runAndSee(mine, "echo owner-again-$((3+4))", "owner-again-7");
    expect(existsSync(marker)).toBe(false);
    // Still watching: the supervisor keeps terminal.read and terminal.supervise.
    await supervisor.sees("owner-again-7");
    supervisor.send({ type: "takeControl" });
    await runAndSee(mine, "echo still-mine-$((4+4))", "still-mine-8");
    expect(mine.controls.filter((c) => c.type === "lease").at(-1)).toMatchObject({ you: true });
  });

  test("of a supervisor who lost terminal.supervise is closed as if the session did not exist (4404)", async () => {
    await using world = await startWorld();
    const { project, member, admin } = await sessionAnAdminSupervises(world);
    const supervisor = await attached(world, admin, "s", { userId: member.user.id });
    world.platform.roles.revoke(project.id, "admin", "terminal.supervise");
    supervisor.send({ type: "takeControl" });
    expect(await supervisor.closed).toBe(4404);
  });

  test("keeps typing while nothing changed: keys sent in one burst arrive in order", async () => {
    await using world = await startWorld();
    const { terminal } = await memberAttachedToDocs(world);
    // One key per message, as a browser sends them: each waits for an access decision, and none may overtake another.
    for (const key of "echo ordered-$((5+6))-abcdefgh\r") terminal.type(key);
    await terminal.sees("ordered-11-abcdefgh");
  });
});
