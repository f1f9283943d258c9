import { describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sourceCommands, adminCommands } from "../../src/cli/index.ts";
import { hatchCli } from "../helpers/cli.ts";
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

  test("the CLI adds, lists, disables and enables sources and sets role, user and agent rules", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "hatch-cli-src-"));
    const root = mkdtempSync(join(tmpdir(), "hatch-cli-root-"));
    const cli = (...argv: string[]) => hatchCli(dataDir, argv, commands);
    await cli("admin", "user", "add", "--email", "o@example.com", "--password", "owner pass 1");
    await cli("admin", "project", "add", "--slug", "p", "--name", "P", "--owner", "o@example.com");
    await cli("admin", "agent", "add", "--project", "p", "--name", "bot", "--owner", "o@example.com");
    const added = await cli("admin", "source", "add", "--project", "p", "--slug", "docs", "--kind", "local", "--root", root, "--label", "Docs", "--json");
    expect(added.code).toBe(0);
    expect(added.json()).toMatchObject({ slug: "docs", root, label: "Docs" });
    expect((await cli("admin", "source", "rule", "--project", "p", "--source", "docs", "--role", "member", "--allow", "rx", "--json")).json()).toMatchObject({ subjectKind: "role", subject: "member", perms: "rx", effect: "allow" });
    expect((await cli("admin", "source", "rule", "--project", "p", "--source", "docs", "--user", "o@example.com", "--path", "private", "--deny", "r", "--json")).json()).toMatchObject({ subjectKind: "user", path: "private", effect: "deny" });
    expect((await cli("admin", "source", "rule", "--project", "p", "--source", "docs", "--agent", "bot", "--allow", "rwx", "--json")).json()).toMatchObject({ subjectKind: "agent" });
    expect((await cli("admin", "source", "disable", "--project", "p", "--slug", "docs", "--json")).json().enabled).toBe(false);
    expect((await cli("admin", "source", "enable", "--project", "p", "--slug", "docs")).out).toContain("(enabled)");
    expect((await cli("admin", "source", "list", "--project", "p")).out).toContain(`docs  local  ${root}`);
    const both = await cli("admin", "source", "rule", "--project", "p", "--source", "docs", "--role", "member", "--user", "o@example.com", "--allow", "r");
    expect(both.code).toBe(2);
    expect(both.err).toContain("exactly one of --role, --user, --agent");
    const neither = await cli("admin", "source", "rule", "--project", "p", "--source", "docs", "--role", "member");
    expect(neither.code).toBe(2);
    const badKind = await cli("admin", "source", "add", "--project", "p", "--slug", "x", "--kind", "cloud");
    expect(badKind.code).toBe(2);
    const badPerms = await cli("admin", "source", "rule", "--project", "p", "--source", "docs", "--role", "member", "--allow", "rq", "--json");
    expect(badPerms.code).toBe(1);
    expect(JSON.parse(badPerms.err).error.code).toBe("invalid_perms");
  });
});
