import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { TERMINAL, attached, createSession, localSource } from "../helpers/terminal.ts";
import { startWorld } from "../helpers/world.ts";

/**
 * TerminalService.narrowed(): "Judged by the owner's current policy whoever asks, so a supervisor cannot
 * start new work in a session its owner could no longer open." README (exec): refused with 403
 * source_narrowed once the session's source narrowed for its owner (..., owner demoted), whoever asks.
 */
describe("a supervisor cannot start new work in a session its owner can no longer open", () => {
  test("the owner demoted to viewer (no terminal at all) keeps a user rule on the source: the supervisor's exec, resize and typing are still refused", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const alice = await world.signedIn(project, "member");
    world.platform.roles.grant(project.id, "admin", "core.execute");
    const admin = await world.signedIn(project, "admin");
    // The source is granted to Alice by name, not through her role.
    const source = localSource(world, project, "docs", {});
    world.hatch.terminal.sources.addRule(source, { subjectKind: "user", subject: alice.user.id, effect: "allow", perms: "rwx" });
    expect((await createSession(alice.client, { sourceSlug: "docs", id: "s" })).status).toBe(201);

    world.platform.projects.setMember(project.id, alice.user.id, "viewer");
    // Alice herself can no longer open, read or drive it: viewers have no terminal.
    expect((await alice.client.get(`${TERMINAL}/sessions/s/read`)).status).toBe(403);

    const asSupervisor = `?userId=${alice.user.id}`;
    const exec = await admin.client.post(`${TERMINAL}/sessions/s/exec${asSupervisor}`, { command: `touch ${source.root}/supervisor-ran` });
    const resize = await admin.client.post(`${TERMINAL}/sessions/s/resize${asSupervisor}`, { cols: 90, rows: 30 });
    const watching = await attached(world, admin, "s", { userId: alice.user.id });
    expect({
      exec: [exec.status, exec.body.error?.code],
      resize: [resize.status, resize.body.error?.code],
      wroteUnderAlicesAuthority: existsSync(join(source.root, "supervisor-ran")),
      supervisorViewReadOnly: watching.controls.some((c) => c.type === "readOnly"),
    }).toEqual({
      exec: [403, "source_narrowed"],
      resize: [403, "source_narrowed"],
      wroteUnderAlicesAuthority: false,
      supervisorViewReadOnly: true,
    });
  });

  test("the terminal hidden from the owner's role by package access: the supervisor's exec is still refused", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    world.platform.roles.grant(project.id, "admin", "core.execute");
    world.platform.roles.grant(project.id, "admin", "agent.access");
    const admin = await world.signedIn(project, "admin");
    const source = localSource(world, project, "docs", { member: "rwx" });
    expect((await createSession(member.client, { sourceSlug: "docs", id: "s" })).status).toBe(201);

    // Chat, calendar and terminal are hidden together from roles without agent.access: members now see none of it.
    world.platform.roles.setPackageAccess(project.id, "agent", "agent.access");
    expect((await member.client.get(`${TERMINAL}/sessions/s/read`)).status).toBe(404);

    const exec = await admin.client.post(`${TERMINAL}/sessions/s/exec?userId=${member.user.id}`, { command: `touch ${source.root}/supervisor-ran` });
    expect({ status: exec.status, code: exec.body.error?.code, ran: existsSync(join(source.root, "supervisor-ran")) }).toEqual({
      status: 403,
      code: "source_narrowed",
      ran: false,
    });
  });
});
