import { describe, expect, test } from "bun:test";
import { symlinkSync } from "node:fs";
import { join } from "node:path";
import { sourceCommands, adminCommands } from "../../src/cli/index.ts";
import { hatchCli, tempDataDir } from "../helpers/cli.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { startWorld } from "../helpers/world.ts";

const commands = [...adminCommands, ...sourceCommands];

describe("managing sources", () => {
  test("owners and admins add sources, set rules and disable them over HTTP; members cannot; bad input changes nothing", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const admin = await world.signedIn(project, "admin");
    const member = await world.signedIn(project, "member");
    const root = world.tempDir("root");
    const added = await admin.client.post("/api/sources", { slug: "docs", kind: "local", root, label: "Docs" });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ slug: "docs", kind: "local", root, label: "Docs", enabled: true, connector: "fs" });
    expect((await admin.client.post("/api/sources/docs/rules", { subjectKind: "role", subject: "member", effect: "allow", perms: "rx" })).status).toBe(201);
    expect((await admin.client.post("/api/sources/docs/rules", { subjectKind: "role", subject: "member", path: "../etc", effect: "allow", perms: "rw" })).status).toBe(400);
    expect((await admin.client.post("/api/sources/docs/rules", { subjectKind: "role", subject: "member", effect: "allow", perms: "rwz" })).status).toBe(400);
    expect((await admin.client.post("/api/sources", { slug: "rel", kind: "local", root: "relative/path" })).status).toBe(400);
    const nul = await admin.client.post("/api/sources", { slug: "nul", kind: "local", root: `${root}\u0000/etc` });
    expect({ status: nul.status, code: nul.body.error?.code }).toEqual({ status: 400, code: "invalid_root" });
    const forged = await admin.client.post("/api/sources", { slug: "forged", kind: "local", root, label: "Docs\nother  local  /  (enabled)  Other" });
    expect({ status: forged.status, code: forged.body.error?.code }).toEqual({ status: 400, code: "invalid_label" });
    // A root reached through a symlink would open wherever the link points at the time: the real path is asked for.
    const linked = join(world.tempDir("links"), "docs-link");
    symlinkSync(root, linked);
    const refused = await admin.client.post("/api/sources", { slug: "linked", kind: "local", root: linked });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toEqual({ code: "invalid_root", message: `Cannot add source "linked": its root ${linked} is reached through a symbolic link; add its real path, ${root}` });
    expect((await admin.client.post("/api/sources", { slug: "docs", kind: "local", root })).status).toBe(409);
    expect((await admin.client.post("/api/sources", { slug: "container-root", kind: "local", root })).status).toBe(400);
    expect((await member.client.get("/api/sources")).status).toBe(403);
    expect((await member.client.post("/api/sources", { slug: "mine", kind: "local", root })).status).toBe(403);
    expect((await admin.client.get("/api/sources/docs/rules")).body.rules).toEqual([expect.objectContaining({ subjectKind: "role", subject: "member", perms: "rx", path: "", effect: "allow" })]);
    expect((await member.client.get("/api/packages/agent/terminal/sources")).body.sources.map((s: any) => [s.slug, s.selectable, s.readOnly])).toEqual([["docs", true, true]]);
    expect((await admin.client.patch("/api/sources/docs", { enabled: false })).body.enabled).toBe(false);
    expect((await member.client.get("/api/packages/agent/terminal/sources")).body.sources[0]).toMatchObject({ selectable: false, reason: "The source is disabled" });
    expect(world.platform.audit.query({ projectId: project.id, action: "source.rule" })).toHaveLength(1);
  });

  test("a rule naming no role, user or agent of the project is refused over HTTP instead of stored to never apply", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const admin = await world.signedIn(project, "admin");
    const member = await world.signedIn(project, "member");
    const agent = world.agent(project, member.user);
    const otherProject = await world.project();
    const elsewhere = world.agent(otherProject, member.user);
    // A user of another project only: naming them here would tell an admin the id exists, and the rule would never apply.
    const outsider = await world.user("outsider");
    world.platform.projects.setMember(otherProject.id, outsider.id, "member");
    expect((await admin.client.post("/api/sources", { slug: "docs", kind: "local", root: world.tempDir("docs") })).status).toBe(201);
    const add = (subjectKind: string, subject: string) => admin.client.post("/api/sources/docs/rules", { subjectKind, subject, effect: "deny", perms: "w" });
    for (const [kind, subject] of [["role", "Member"], ["role", "members"], ["user", member.user.email], ["user", outsider.id], ["user", "no-such-user"], ["agent", agent.name], ["agent", elsewhere.id]]) {
      const refused = await add(kind!, subject!);
      expect({ subject, status: refused.status, code: refused.body.error.code }).toEqual({ subject, status: 400, code: "unknown_subject" });
    }
    expect((await admin.client.get("/api/sources/docs/rules")).body.rules).toEqual([]);
    for (const [kind, subject] of [["role", "member"], ["user", member.user.id], ["agent", agent.id]]) expect((await add(kind!, subject!)).status).toBe(201);
  });

  test("the CLI adds, lists, disables and enables sources and sets role, user and agent rules", async () => {
    using dataDir = tempDataDir();
    using root = tempDir("cli-root");
    const cli = (...argv: string[]) => hatchCli(dataDir.path, argv, commands);
    await cli("admin", "user", "add", "--email", "o@example.com", "--password", "owner pass 1");
    await cli("admin", "project", "add", "--slug", "p", "--name", "P", "--owner", "o@example.com");
    await cli("admin", "agent", "add", "--project", "p", "--name", "bot", "--owner", "o@example.com");
    const added = await cli("admin", "source", "add", "--project", "p", "--slug", "docs", "--kind", "local", "--root", root.path, "--label", "Docs", "--json");
    expect(added.code).toBe(0);
    expect(added.json()).toMatchObject({ slug: "docs", root: root.path, label: "Docs" });
    expect((await cli("admin", "source", "rule", "--project", "p", "--source", "docs", "--role", "member", "--allow", "rx", "--json")).json()).toMatchObject({ subjectKind: "role", subject: "member", perms: "rx", effect: "allow" });
    expect((await cli("admin", "source", "rule", "--project", "p", "--source", "docs", "--user", "o@example.com", "--path", "private", "--deny", "r", "--json")).json()).toMatchObject({ subjectKind: "user", path: "private", effect: "deny" });
    expect((await cli("admin", "source", "rule", "--project", "p", "--source", "docs", "--agent", "bot", "--allow", "rwx", "--json")).json()).toMatchObject({ subjectKind: "agent" });
    expect((await cli("admin", "source", "disable", "--project", "p", "--slug", "docs", "--json")).json().enabled).toBe(false);
    expect((await cli("admin", "source", "enable", "--project", "p", "--slug", "docs")).out).toContain("(enabled)");
    expect((await cli("admin", "source", "list", "--project", "p")).out).toContain(`docs  local  ${root.path}`);
    const both = await cli("admin", "source", "rule", "--project", "p", "--source", "docs", "--role", "member", "--user", "o@example.com", "--allow", "r");
    expect(both.code).toBe(2);
    expect(both.err).toContain("exactly one of --role, --user, --agent");
    const neither = await cli("admin", "source", "rule", "--project", "p", "--source", "docs", "--role", "member");
    expect(neither.code).toBe(2);
    const badKind = await cli("admin", "source", "add", "--project", "p", "--slug", "x", "--kind", "cloud");
    expect(badKind.code).toBe(2);
    // A role name that matches no role (a capital letter) would make a rule that never applies.
    const noRole = await cli("admin", "source", "rule", "--project", "p", "--source", "docs", "--role", "Member", "--deny", "w");
    expect({ code: noRole.code, err: noRole.err.trim() }).toEqual({ code: 1, err: expect.stringContaining('Cannot find a role named "Member" in this project') });
    // A user who is no member of the project answers as one who does not exist.
    await cli("admin", "user", "add", "--email", "stranger@example.com", "--password", "stranger pass 1");
    for (const email of ["stranger@example.com", "nobody@example.com"]) {
      const refused = await cli("admin", "source", "rule", "--project", "p", "--source", "docs", "--user", email, "--allow", "rwx", "--json");
      expect({ code: refused.code, error: JSON.parse(refused.err).error }).toEqual({ code: 1, error: { code: "user_not_found", message: `Cannot find a member "${email}" in this project` } });
    }
    const badPerms = await cli("admin", "source", "rule", "--project", "p", "--source", "docs", "--role", "member", "--allow", "rq", "--json");
    expect(badPerms.code).toBe(1);
    expect(JSON.parse(badPerms.err).error.code).toBe("invalid_perms");

    const listed = await cli("admin", "source", "rule", "list", "--project", "p", "--source", "docs");
    expect(listed.out.trim().split("\n")).toEqual([
      "#1 allow rx to role member on /",
      expect.stringMatching(/^#2 deny r to user \S+ on \/private$/),
      expect.stringMatching(/^#3 allow rwx to agent \S+ on \/$/),
    ]);
    const removed = await cli("admin", "source", "rule", "remove", "--project", "p", "--source", "docs", "--id", "2");
    expect({ code: removed.code, out: removed.out.trim() }).toEqual({ code: 0, out: expect.stringMatching(/^removed #2 deny r to user /) });
    expect((await cli("admin", "source", "rule", "list", "--project", "p", "--source", "docs", "--json")).json().map((r: any) => r.id)).toEqual([1, 3]);
    const again = await cli("admin", "source", "rule", "remove", "--project", "p", "--source", "docs", "--id", "2");
    expect({ code: again.code, err: again.err.trim() }).toEqual({ code: 1, err: expect.stringContaining('Cannot find rule 2 on source "docs"') });
    const notAnId = await cli("admin", "source", "rule", "remove", "--project", "p", "--source", "docs", "--id", "two");
    expect({ code: notAnId.code, err: notAnId.err }).toEqual({ code: 2, err: expect.stringContaining("--id must be a rule id") });
  });

  test("removing a rule over HTTP takes effect at once, narrows open sessions, and is audited; another source's rule id is not found", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const admin = await world.signedIn(project, "admin");
    const member = await world.signedIn(project, "member");
    for (const slug of ["docs", "other"]) await admin.client.post("/api/sources", { slug, kind: "local", root: world.tempDir(slug) });
    const read = (await admin.client.post("/api/sources/docs/rules", { subjectKind: "role", subject: "member", effect: "allow", perms: "rx" })).body;
    const write = (await admin.client.post("/api/sources/docs/rules", { subjectKind: "role", subject: "member", effect: "allow", perms: "w" })).body;
    const elsewhere = (await admin.client.post("/api/sources/other/rules", { subjectKind: "role", subject: "member", effect: "allow", perms: "r" })).body;
    expect((await member.client.post("/api/packages/agent/terminal/sessions", { sourceSlug: "docs", id: "s" })).status).toBe(201);

    const bad = [
      ["member", `/api/sources/docs/rules/${write.id}`, 403, "admin_required"],
      ["admin", `/api/sources/docs/rules/${elsewhere.id}`, 404, "rule_not_found"],
      ["admin", `/api/sources/nowhere/rules/${write.id}`, 404, "source_not_found"],
      ["admin", "/api/sources/docs/rules/first", 400, "invalid_request"],
      ["admin", "/api/sources/docs/rules/0", 400, "invalid_request"],
    ] as const;
    for (const [who, path, status, code] of bad) {
      const answer = await (who === "admin" ? admin : member).client.delete(path);
      expect({ path, status: answer.status, code: answer.body.error.code }).toEqual({ path, status, code });
    }
    expect((await admin.client.get("/api/sources/docs/rules")).body.rules).toHaveLength(2);

    const removed = await admin.client.delete(`/api/sources/docs/rules/${write.id}`);
    expect({ status: removed.status, body: removed.body }).toEqual({ status: 200, body: expect.objectContaining({ id: write.id, perms: "w", effect: "allow" }) });
    expect((await admin.client.get("/api/sources/docs/rules")).body.rules.map((r: any) => r.id)).toEqual([read.id]);
    expect((await member.client.get("/api/packages/agent/terminal/sources")).body.sources.find((s: any) => s.slug === "docs")).toMatchObject({ readOnly: true });
    const exec = await member.client.post("/api/packages/agent/terminal/sessions/s/exec", { command: "echo ran" });
    expect({ status: exec.status, code: exec.body.error.code }).toEqual({ status: 403, code: "source_narrowed" });
    expect(world.platform.audit.query({ projectId: project.id, action: "source.rule.remove" })).toEqual([
      expect.objectContaining({ userId: admin.user.id, target: "docs", detail: expect.objectContaining({ id: write.id, perms: "w" }) }),
    ]);
    // The entry of its adding names the same id, so the log matches an add to its removal.
    expect(world.platform.audit.query({ projectId: project.id, action: "source.rule" }).map((entry) => entry.detail?.id).sort()).toEqual([read.id, write.id, elsewhere.id].sort());
  });

  test("a source update is audited with what it changed, and one that changes nothing ({}, or the values it has) writes no entry, over HTTP or the CLI", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const admin = await world.signedIn(project, "admin");
    expect((await admin.client.post("/api/sources", { slug: "docs", kind: "local", root: world.tempDir("docs") })).status).toBe(201);
    for (const body of [{}, { enabled: true }, { enabled: false, running: true }, { enabled: false, running: true }, { running: false }]) {
      expect((await admin.client.patch("/api/sources/docs", body)).status).toBe(200);
    }
    for (const verb of ["disable", "enable", "enable"]) {
      expect((await hatchCli(world.config.dataDir, ["admin", "source", verb, "--project", project.slug, "--slug", "docs"], commands)).code).toBe(0);
    }
    expect(world.platform.audit.query({ projectId: project.id, action: "source.update" }).reverse().map((entry) => entry.detail)).toEqual([
      { enabled: false },
      { running: false },
      { enabled: true, via: "cli" },
    ]);
  });

  test("without a session the source routes answer 401, and a member 403, whatever the body", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    for (const client of [world.anonymous(), member.client]) {
      const answers = [await client.post("/api/sources", { kind: "nonsense" }), await client.patch("/api/sources/x", "[]"), await client.post("/api/sources/x/rules", {})];
      expect(answers.map((a) => a.status)).toEqual(Array(3).fill(client === member.client ? 403 : 401));
    }
  });
});
