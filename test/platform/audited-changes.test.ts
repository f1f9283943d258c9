import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { sourceCommands, workflowCommands } from "../../src/cli/index.ts";
import { DATABASE_FILE } from "../../src/db/index.ts";
import { hatchCli, tempDataDir } from "../helpers/cli.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { startWorld, type World } from "../helpers/world.ts";
import { commandWorkflow, fire, issueToken } from "../helpers/workflows.ts";
import { TERMINAL } from "../helpers/terminal.ts";

/** Make every insert into the audit log fail, as a lock held past the busy timeout or a full disk would. */
function auditLogFails(sqlite: Database): Disposable {
  sqlite.exec("CREATE TRIGGER audit_log_fails BEFORE INSERT ON audit_log BEGIN SELECT RAISE(ABORT, 'the audit log cannot be written'); END");
  return { [Symbol.dispose]: () => sqlite.exec("DROP TRIGGER audit_log_fails") };
}

const auditRows = (world: World) => (world.platform.db.$client.query("SELECT count(*) AS n FROM audit_log").get() as { n: number }).n;

describe("a change and its audit entry are one transaction", () => {
  test("over HTTP, a change whose entry cannot be written answers 500 and is not kept", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const root = world.tempDir("audited");
    const rows = auditRows(world);
    {
      using _ = auditLogFails(world.platform.db.$client);
      const refused = [
        await owner.client.put("/api/settings/terminalMaxSessions", { value: 1 }),
        await owner.client.post("/api/roles", { name: "auditor" }),
        await owner.client.put("/api/roles/member/features/exec.unconfined"),
        await owner.client.put("/api/secrets/user/api-key", { value: "s3cret value" }),
        await owner.client.post("/api/agents", { name: "helper" }),
        await owner.client.post("/api/sources", { slug: "docs", kind: "local", root }),
        await owner.client.post("/api/workflows", { name: "nightly", runner: { kind: "command", command: "echo hi" } }),
      ];
      expect(refused.map((r) => r.status)).toEqual([500, 500, 500, 500, 500, 500, 500]);
    }
    expect(auditRows(world)).toBe(rows);
    const setting = (await owner.client.get("/api/settings")).body.settings.find((s: { key: string }) => s.key === "terminalMaxSessions");
    expect(setting).toMatchObject({ value: 8, scope: "default" });
    expect((await owner.client.get("/api/roles")).body.roles.map((r: { name: string }) => r.name)).not.toContain("auditor");
    const member = (await owner.client.get("/api/roles")).body.roles.find((r: { name: string }) => r.name === "member");
    expect(member.features).not.toContain("exec.unconfined");
    expect((await owner.client.get("/api/secrets")).body.secrets).toEqual([]);
    expect((await owner.client.get("/api/agents")).body.agents).toEqual([]);
    expect((await owner.client.get("/api/sources")).body.sources.map((s: { slug: string }) => s.slug)).not.toContain("docs");
    expect((await owner.client.get("/api/workflows")).body.workflows).toEqual([]);
  });

  test("a token rotation whose entry cannot be written leaves the old token firing: the new one was never shown", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const workflow = await commandWorkflow(owner, "cat >/dev/null; echo done");
    const { token, triggerId } = await issueToken(owner.client, workflow.id);
    {
      using _ = auditLogFails(world.platform.db.$client);
      const rotated = await owner.client.post(`/api/workflows/${workflow.id}/triggers/${triggerId}/rotate`);
      expect(rotated.status).toBe(500);
      expect(JSON.stringify(rotated.body)).not.toContain("wfk1");
      expect((await owner.client.delete(`/api/workflows/${workflow.id}/triggers/${triggerId}`)).status).toBe(500);
    }
    expect((await fire(world, workflow.id, token, { text: "still works" })).status).toBe(202);
  });

  test("from the CLI, a command whose entry cannot be written exits 1 and changes nothing", async () => {
    using dir = tempDataDir();
    await hatchCli(dir.path, ["admin", "user", "add", "--email", "owner@example.com", "--password", "owner pass 1"]);
    await hatchCli(dir.path, ["admin", "user", "add", "--email", "member@example.com", "--password", "member pass 1"]);
    await hatchCli(dir.path, ["admin", "project", "add", "--slug", "demo", "--name", "Demo", "--owner", "owner@example.com"]);
    await hatchCli(dir.path, ["admin", "member", "add", "--project", "demo", "--email", "member@example.com", "--role", "member"]);
    const wf = (await hatchCli(dir.path, ["workflow", "add", "--project", "demo", "--owner", "owner@example.com", "--name", "n", "--command", "echo hi", "--json"], workflowCommands)).json();
    const first = (await hatchCli(dir.path, ["workflow", "token", "rotate", "--workflow", wf.id, "--json"], workflowCommands)).json();
    const sqlite = new Database(join(dir.path, DATABASE_FILE));
    const count = (sql: string) => (sqlite.query(sql).get() as { n: number }).n;
    const before = {
      audit: count("SELECT count(*) AS n FROM audit_log"),
      members: count("SELECT count(*) AS n FROM members"),
      users: count("SELECT count(*) AS n FROM users"),
      hash: sqlite.query("SELECT password_hash AS h FROM users WHERE email = 'member@example.com'").get(),
      token: sqlite.query("SELECT token_hash AS h FROM workflow_triggers WHERE id = ?").get(first.triggerId),
    };
    {
      using _ = auditLogFails(sqlite);
      const runs = [
        await hatchCli(dir.path, ["admin", "member", "remove", "--project", "demo", "--email", "member@example.com"]),
        await hatchCli(dir.path, ["admin", "user", "add", "--email", "third@example.com", "--password", "third pass 1"]),
        await hatchCli(dir.path, ["admin", "user", "password", "--email", "member@example.com", "--password", "new pass 12"]),
        await hatchCli(dir.path, ["admin", "source", "add", "--project", "demo", "--slug", "docs", "--kind", "local", "--root", dir.path], sourceCommands),
        await hatchCli(dir.path, ["workflow", "token", "rotate", "--workflow", wf.id], workflowCommands),
      ];
      expect(runs.map((r) => r.code)).toEqual([1, 1, 1, 1, 1]);
      expect(runs.map((r) => r.out).join("")).not.toContain("wfk1");
    }
    expect({
      audit: count("SELECT count(*) AS n FROM audit_log"),
      members: count("SELECT count(*) AS n FROM members"),
      users: count("SELECT count(*) AS n FROM users"),
      hash: sqlite.query("SELECT password_hash AS h FROM users WHERE email = 'member@example.com'").get(),
      token: sqlite.query("SELECT token_hash AS h FROM workflow_triggers WHERE id = ?").get(first.triggerId),
    }).toEqual(before);
    expect(count("SELECT count(*) AS n FROM sources WHERE slug = 'docs'")).toBe(0);
    sqlite.close();
  });
});

describe("rules the service writes itself", () => {
  test("the defaults seeded at a source's first attach (owners and admins rwx, members r) are in the project's audit log, as every other rule added is", async () => {
    using mount = tempDir("mount");
    await using world = await startWorld({ HATCH_OS_MOUNTS: mount.path });
    const project = await world.project();
    const admin = await world.signedIn(project, "admin");
    const member = await world.signedIn(project, "member");
    expect((await admin.client.post("/api/sources", { slug: "docs", kind: "local", root: mount.path })).status).toBe(201);
    // The member's listing is the source's first attach: three rules appear, one of them what the member may now read.
    expect((await member.client.get(`${TERMINAL}/sources`)).status).toBe(200);
    const rules = (await admin.client.get("/api/sources/docs/rules")).body.rules as { subject: string; perms: string }[];
    expect(rules.map((r) => `${r.subject}:${r.perms}`)).toEqual(["owner:rwx", "admin:rwx", "member:r"]);
    const entries = (await admin.client.get("/api/audit?action=source.rule")).body.entries;
    expect(entries).toEqual([
      expect.objectContaining({ userId: null, target: "docs", detail: { seeded: true, rules: [{ role: "owner", perms: "rwx" }, { role: "admin", perms: "rwx" }, { role: "member", perms: "r" }] } }),
    ]);
  });
});
