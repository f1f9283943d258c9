import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfig } from "../../src/config.ts";
import { DATABASE_FILE } from "../../src/db/index.ts";
import { startHatch } from "../../src/main.ts";
import { adminCommands, auditCommands, sourceCommands, workflowCommands } from "../../src/cli/index.ts";
import { hatchCli, hatchCliProcess, tempDataDir } from "../helpers/cli.ts";
import { HttpClient } from "../helpers/http-client.ts";
import { startWorld, TEST_PASSWORD } from "../helpers/world.ts";

describe("the hatch CLI", () => {
  test("creates an owner, a project and a member who then logs in and reads the terminal health route", async () => {
    using dir = tempDataDir();
    expect((await hatchCli(dir.path, ["admin", "user", "add", "--email", "owner@example.com", "--password", "owner pass 1"])).code).toBe(0);
    const project = await hatchCli(dir.path, ["admin", "project", "add", "--slug", "demo", "--name", "Demo", "--owner", "owner@example.com", "--json"]);
    expect(project.code).toBe(0);
    expect(project.json()).toMatchObject({ slug: "demo", name: "Demo", id: expect.any(String) });
    const twoLines = await hatchCli(dir.path, ["admin", "project", "add", "--slug", "two", "--name", "Two\nlines", "--owner", "owner@example.com", "--json"]);
    expect({ code: twoLines.code, error: JSON.parse(twoLines.err).error.code }).toEqual({ code: 1, error: "invalid_name" });
    await hatchCli(dir.path, ["admin", "user", "add", "--email", "member@example.com", "--password", "member pass 1"]);
    const member = await hatchCli(dir.path, ["admin", "member", "add", "--project", "demo", "--email", "member@example.com", "--role", "member", "--json"]);
    expect(member.json()).toEqual({ project: "demo", email: "member@example.com", role: "member" });
    // The only owner cannot be demoted: nobody could grant what only an owner grants any more. With a second owner they can.
    const demoted = await hatchCli(dir.path, ["admin", "member", "add", "--project", "demo", "--email", "owner@example.com", "--role", "admin"]);
    expect({ code: demoted.code, err: demoted.err.trim() }).toEqual({ code: 1, err: expect.stringContaining("Cannot change the role of the project's only owner") });
    expect((await hatchCli(dir.path, ["admin", "member", "add", "--project", "demo", "--email", "member@example.com", "--role", "owner"])).code).toBe(0);
    expect((await hatchCli(dir.path, ["admin", "member", "add", "--project", "demo", "--email", "member@example.com", "--role", "member"])).code).toBe(0);

    await using hatch = await startHatch(loadConfig({ HATCH_PORT: "0", HATCH_COMPANION_PORT: "0", HATCH_DATA_DIR: dir.path }));
    const client = new HttpClient(hatch.url);
    expect((await client.post("/api/auth/login", { email: "member@example.com", password: "member pass 1" })).status).toBe(200);
    expect((await client.get("/api/packages/agent/terminal/health")).status).toBe(200);
  });

  test("user add and project add are audited, as every other admin command is; the password is not in the entry", async () => {
    using dir = tempDataDir();
    await hatchCli(dir.path, ["admin", "user", "add", "--email", "owner@example.com", "--password", "owner pass 1"]);
    await hatchCli(dir.path, ["admin", "project", "add", "--slug", "demo", "--name", "Demo", "--owner", "owner@example.com"]);
    using db = new Database(join(dir.path, DATABASE_FILE), { readonly: true });
    const user = db.query("SELECT id FROM users").get() as { id: string };
    const project = db.query("SELECT id FROM projects").get() as { id: string };
    const entries = db.query("SELECT action, user_id AS userId, project_id AS projectId, target, detail FROM audit_log ORDER BY id").all();
    expect(entries).toEqual([
      { action: "user.add", userId: user.id, projectId: null, target: "owner@example.com", detail: '{"via":"cli"}' },
      { action: "project.add", userId: user.id, projectId: project.id, target: "demo", detail: '{"owner":"owner@example.com","via":"cli"}' },
    ]);
  });

  test("roles, grants, agents and settings", async () => {
    using dir = tempDataDir();
    await hatchCli(dir.path, ["admin", "user", "add", "--email", "o@example.com", "--password", "owner pass 1"]);
    await hatchCli(dir.path, ["admin", "project", "add", "--slug", "p", "--name", "P", "--owner", "o@example.com"]);
    expect((await hatchCli(dir.path, ["admin", "role", "add", "--project", "p", "--name", "ops", "--json"])).json()).toEqual({ name: "ops", builtin: false, features: [] });
    const granted = await hatchCli(dir.path, ["admin", "grant", "--project", "p", "--role", "ops", "--feature", "terminal.supervise", "--json"]);
    expect(granted.json().features).toEqual(["terminal.supervise"]);
    const revoked = await hatchCli(dir.path, ["admin", "revoke", "--project", "p", "--role", "ops", "--feature", "terminal.supervise", "--json"]);
    expect(revoked.json().features).toEqual([]);
    const agent = await hatchCli(dir.path, ["admin", "agent", "add", "--project", "p", "--name", "helper", "--owner", "o@example.com", "--json"]);
    expect(agent.json()).toMatchObject({ name: "helper", shared: false });
    // As POST /api/agents asks of its caller: the owner's role must reach the terminal and see the agent package.
    await hatchCli(dir.path, ["admin", "user", "add", "--email", "v@example.com", "--password", "viewer pass 1"]);
    await hatchCli(dir.path, ["admin", "member", "add", "--project", "p", "--email", "v@example.com", "--role", "ops"]);
    const noTerminal = await hatchCli(dir.path, ["admin", "agent", "add", "--project", "p", "--name", "ops-bot", "--owner", "v@example.com", "--json"]);
    expect({ code: noTerminal.code, error: JSON.parse(noTerminal.err).error.code }).toEqual({ code: 1, error: "feature_required" });
    await hatchCli(dir.path, ["admin", "grant", "--project", "p", "--role", "ops", "--feature", "terminal.read"]);
    await hatchCli(dir.path, ["admin", "package-access", "--project", "p", "--package", "agent", "--feature", "terminal.supervise"]);
    const hidden = await hatchCli(dir.path, ["admin", "agent", "add", "--project", "p", "--name", "ops-bot", "--owner", "v@example.com", "--json"]);
    expect({ code: hidden.code, error: JSON.parse(hidden.err).error.code }).toEqual({ code: 1, error: "package_hidden" });
    await hatchCli(dir.path, ["admin", "package-access", "--project", "p", "--package", "agent", "--clear"]);
    expect((await hatchCli(dir.path, ["admin", "agent", "add", "--project", "p", "--name", "ops-bot", "--owner", "v@example.com"])).code).toBe(0);
    expect((await hatchCli(dir.path, ["admin", "setting", "set", "terminalIdleShutdownMinutes", "5", "--json"])).json().value).toBe(5);
    expect((await hatchCli(dir.path, ["admin", "setting", "get", "terminalIdleShutdownMinutes"])).out).toBe("terminalIdleShutdownMinutes = 5 minutes (set server-wide)\n");
    // A project's own value, over the server-wide one; unset drops it again.
    const own = await hatchCli(dir.path, ["admin", "setting", "set", "terminalIdleShutdownMinutes", "20", "--project", "p"]);
    expect(own.out).toBe("terminalIdleShutdownMinutes = 20 (set for the project)\n");
    expect((await hatchCli(dir.path, ["admin", "setting", "get", "terminalIdleShutdownMinutes", "--project", "p", "--json"])).json()).toMatchObject({ value: 20, scope: "project" });
    expect((await hatchCli(dir.path, ["admin", "setting", "get", "terminalIdleShutdownMinutes", "--json"])).json()).toMatchObject({ value: 5, scope: "server" });
    expect((await hatchCli(dir.path, ["admin", "setting", "unset", "terminalIdleShutdownMinutes", "--project", "p", "--json"])).json()).toMatchObject({ value: 5, scope: "server" });
    expect((await hatchCli(dir.path, ["admin", "setting", "unset", "terminalIdleShutdownMinutes"])).out).toBe("terminalIdleShutdownMinutes = 60 (default)\n");
    const unknownProject = await hatchCli(dir.path, ["admin", "setting", "set", "terminalIdleShutdownMinutes", "20", "--project", "nope", "--json"]);
    expect({ code: unknownProject.code, error: JSON.parse(unknownProject.err).error.code }).toEqual({ code: 1, error: "project_not_found" });
  });

  test("roles, package access and agents the CLI adds or changes are audited, as the same changes over HTTP are", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const cli = (...argv: string[]) => hatchCli(world.config.dataDir, argv);
    expect((await cli("admin", "role", "add", "--project", project.slug, "--name", "ops")).code).toBe(0);
    expect((await cli("admin", "package-access", "--project", project.slug, "--package", "agent", "--feature", "agent.access")).code).toBe(0);
    expect((await cli("admin", "package-access", "--project", project.slug, "--package", "agent", "--clear")).code).toBe(0);
    const agent = (await cli("admin", "agent", "add", "--project", project.slug, "--name", "helper", "--owner", project.owner.email, "--json")).json();
    const entries = world.platform.audit.query({ projectId: project.id }).reverse();
    expect(entries.map(({ action, userId, agentId, target, detail }) => ({ action, userId, agentId, target, detail }))).toEqual([
      { action: "role.add", userId: null, agentId: null, target: "ops", detail: { via: "cli" } },
      { action: "package.access", userId: null, agentId: null, target: "agent", detail: { feature: "agent.access", via: "cli" } },
      { action: "package.access", userId: null, agentId: null, target: "agent", detail: { feature: null, via: "cli" } },
      { action: "agent.add", userId: project.owner.id, agentId: agent.id, target: "helper", detail: { via: "cli" } },
    ]);
  });

  test("a password piped to --password-stdin creates the user without showing on the command line; one trailing newline is not part of it", async () => {
    using dir = tempDataDir();
    const created = await hatchCliProcess(dir.path, ["admin", "user", "add", "--email", "piped@example.com", "--password-stdin"], {}, "piped pass 1\n");
    expect(created).toEqual({ code: 0, out: expect.stringMatching(/^created user piped@example\.com \(/), err: "" });
    await using hatch = await startHatch(loadConfig({ HATCH_PORT: "0", HATCH_COMPANION_PORT: "0", HATCH_DATA_DIR: dir.path }));
    const login = (password: string) => new HttpClient(hatch.url).post("/api/auth/login", { email: "piped@example.com", password });
    expect((await login("piped pass 1")).status).toBe(200);
    expect((await login("piped pass 1\n")).status).toBe(401);
  });

  test("admin user password sets a new password, ends every sign-in of that user and is audited; bad input changes nothing", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const other = await world.signedIn(project, "member");
    expect((await member.client.get("/api/auth/me")).status).toBe(200);
    const cli = (argv: string[], stdin = "") => hatchCli(world.config.dataDir, ["admin", "user", "password", ...argv], adminCommands, stdin);

    for (const flags of [[], ["--password", "new pass 12", "--password-stdin"]]) {
      const ambiguous = await cli(["--email", member.user.email, ...flags], "new pass 12");
      expect({ code: ambiguous.code, out: ambiguous.out }).toEqual({ code: 2, out: "" });
      expect(ambiguous.err).toStartWith("hatch: give exactly one of --password, --password-stdin\n");
    }
    const unknown = await cli(["--email", "nobody@example.com", "--password-stdin", "--json"], "new pass 12");
    expect({ code: unknown.code, error: JSON.parse(unknown.err).error.code }).toEqual({ code: 1, error: "user_not_found" });
    const weak = await cli(["--email", member.user.email, "--password-stdin", "--json"], "short\n");
    expect({ code: weak.code, error: JSON.parse(weak.err).error.code }).toEqual({ code: 1, error: "weak_password" });
    expect((await member.client.get("/api/auth/me")).status).toBe(200);

    const reset = await cli(["--email", member.user.email, "--password-stdin", "--json"], "new pass 12\n");
    expect(reset.code).toBe(0);
    expect(reset.json()).toEqual({ id: member.user.id, email: member.user.email, createdAt: expect.any(Number), signedOut: 1 });
    expect(reset.out).not.toContain("new pass 12");
    // The holder of the old cookie (perhaps whoever learnt the old password) is out; another user is not.
    expect((await member.client.get("/api/auth/me")).status).toBe(401);
    expect((await other.client.get("/api/auth/me")).status).toBe(200);
    const login = (password: string) => world.anonymous().post("/api/auth/login", { email: member.user.email, password });
    expect((await login("new pass 12")).status).toBe(200);
    expect((await login(TEST_PASSWORD)).status).toBe(401);
    // A user's password belongs to no project: the entry is in the log without one.
    const audited = world.hatch.sqlite.query("SELECT user_id, project_id, target, detail FROM audit_log WHERE action = 'user.password'").all();
    expect(audited).toEqual([{ user_id: member.user.id, project_id: null, target: member.user.email, detail: JSON.stringify({ signedOut: 1, via: "cli" }) }]);
  });

  test("a login whose old password was verified just before a reset does not become a sign-in after it", async () => {
    await using world = await startWorld();
    const user = await world.user("member");
    // The login route's two steps, with the CLI's reset (another process, in the real thing) between them.
    const login = await world.platform.users.verifyLogin(user.email, TEST_PASSWORD);
    expect(login?.user.id).toBe(user.id);
    const reset = await hatchCli(world.config.dataDir, ["admin", "user", "password", "--email", user.email, "--password-stdin"], adminCommands, "new pass 12\n");
    expect(reset.code).toBe(0);
    expect(await world.platform.sessions.create(login!, null)).toBeNull();
    expect(world.hatch.sqlite.query("SELECT count(*) AS n FROM auth_sessions WHERE user_id = ?").get(user.id)).toEqual({ n: 0 });
    // A login verified against the new password signs in.
    const fresh = await world.platform.users.verifyLogin(user.email, "new pass 12");
    expect(await world.platform.sessions.create(fresh!, null)).toMatchObject({ token: expect.any(String) });
  });

  describe("member remove", () => {
    test("takes a user out of a project, answering like member add, and is audited as member.remove", async () => {
      await using world = await startWorld();
      const project = await world.project();
      const member = await world.user("member");
      world.platform.projects.setMember(project.id, member.id, "member");
      const cli = (...argv: string[]) => hatchCli(world.config.dataDir, argv);
      const removed = await cli("admin", "member", "remove", "--project", project.slug, "--email", member.email, "--json");
      expect({ code: removed.code, json: removed.json() }).toEqual({ code: 0, json: { project: project.slug, email: member.email, role: null, previousRole: "member" } });
      expect(world.platform.projects.roleOf(project.id, member.id)).toBeNull();
      const entries = world.platform.audit.query({ projectId: project.id, action: "member.remove" });
      expect(entries.map(({ userId, target, detail }) => ({ userId, target, detail }))).toEqual([{ userId: member.id, target: member.email, detail: { role: "member", via: "cli" } }]);
      // Without --json, one line saying what was taken away.
      world.platform.projects.setMember(project.id, member.id, "viewer");
      const human = await cli("admin", "member", "remove", "--project", project.slug, "--email", member.email);
      expect({ code: human.code, out: human.out }).toEqual({ code: 0, out: `${member.email} is no longer a member of ${project.slug} (was viewer)\n` });
    });

    test("refuses an unknown project, an unknown user and a user who is not a member with exit 1 and the error's code, changing nothing", async () => {
      await using world = await startWorld();
      const project = await world.project();
      const member = await world.user("member");
      world.platform.projects.setMember(project.id, member.id, "member");
      const outsider = await world.user("outsider");
      const remove = async (slug: string, email: string) => {
        const result = await hatchCli(world.config.dataDir, ["admin", "member", "remove", "--project", slug, "--email", email, "--json"]);
        return { code: result.code, out: result.out, error: JSON.parse(result.err).error };
      };
      expect(await remove("no-such-project", member.email)).toEqual({ code: 1, out: "", error: { code: "project_not_found", message: 'Cannot find project "no-such-project"' } });
      expect(await remove(project.slug, "nobody@example.com")).toEqual({ code: 1, out: "", error: { code: "user_not_found", message: 'Cannot find user "nobody@example.com"' } });
      expect(await remove(project.slug, outsider.email)).toEqual({
        code: 1,
        out: "",
        error: { code: "not_a_member", message: `Cannot remove ${outsider.email} from ${project.slug}: they are not a member` },
      });
      expect(world.platform.projects.roleOf(project.id, member.id)).toBe("member");
      expect(world.platform.audit.query({ projectId: project.id, action: "member.remove" })).toEqual([]);
    });

    test("refuses the project's only owner with last_owner, as demoting them is refused; with a second owner either can go", async () => {
      await using world = await startWorld();
      const project = await world.project();
      const cli = (...argv: string[]) => hatchCli(world.config.dataDir, argv);
      const only = await cli("admin", "member", "remove", "--project", project.slug, "--email", project.owner.email, "--json");
      expect({ code: only.code, error: JSON.parse(only.err).error }).toEqual({
        code: 1,
        error: { code: "last_owner", message: "Cannot remove the project's only owner: make another member owner first" },
      });
      expect(world.platform.projects.roleOf(project.id, project.owner.id)).toBe("owner");
      const human = await cli("admin", "member", "remove", "--project", project.slug, "--email", project.owner.email);
      expect({ code: human.code, err: human.err }).toEqual({ code: 1, err: "hatch: Cannot remove the project's only owner: make another member owner first\n" });

      const second = await world.user("owner");
      world.platform.projects.setMember(project.id, second.id, "owner");
      expect((await cli("admin", "member", "remove", "--project", project.slug, "--email", project.owner.email)).code).toBe(0);
      expect(world.platform.projects.membersWithRoles(project.id, ["owner"])).toEqual([{ userId: second.id, role: "owner" }]);
      // The one left is now the only owner.
      expect((await cli("admin", "member", "remove", "--project", project.slug, "--email", second.email)).code).toBe(1);
    });

    test("without --project or --email prints its usage and exits 2; hatch --help lists it", async () => {
      using dir = tempDataDir();
      for (const [flags, missing] of [[["--email", "a@example.com"], "--project"], [["--project", "p"], "--email"]] as const) {
        const result = await hatchCli(dir.path, ["admin", "member", "remove", ...flags]);
        expect({ code: result.code, out: result.out }).toEqual({ code: 2, out: "" });
        expect(result.err).toStartWith(`hatch: ${missing} is required\n\nusage: hatch admin member remove [options] [--json]\n`);
      }
      const help = await hatchCli(dir.path, ["--help"]);
      expect(help.out).toContain("\n  hatch admin member remove  Remove a user from a project");
    });
  });

  test("bad arguments print usage and exit non-zero, changing nothing", async () => {
    using dir = tempDataDir();
    const missing = await hatchCli(dir.path, ["admin", "user", "add", "--email", "x@example.com"]);
    expect(missing.code).toBe(2);
    expect(missing.err).toContain("give exactly one of --password, --password-stdin");
    expect(missing.err).toContain("usage: hatch admin user add");
    const unknownFlag = await hatchCli(dir.path, ["admin", "user", "add", "--email", "x@example.com", "--password", "long enough", "--colour", "red"]);
    expect(unknownFlag.code).toBe(2);
    const unknownCommand = await hatchCli(dir.path, ["admin", "frobnicate"]);
    expect(unknownCommand.code).toBe(2);
    expect(unknownCommand.err).toContain("usage: hatch");
    expect((await hatchCli(dir.path, [])).code).toBe(2);
    // Attach or detach, never both: which one was meant is not for the CLI to guess.
    await hatchCli(dir.path, ["admin", "user", "add", "--email", "o@example.com", "--password", "owner pass 1"]);
    await hatchCli(dir.path, ["admin", "project", "add", "--slug", "p", "--name", "P", "--owner", "o@example.com"]);
    await hatchCli(dir.path, ["admin", "package-access", "--project", "p", "--package", "agent", "--feature", "agent.access"]);
    for (const flags of [["--feature", "other.access", "--clear"], []]) {
      const ambiguous = await hatchCli(dir.path, ["admin", "package-access", "--project", "p", "--package", "agent", ...flags]);
      expect({ code: ambiguous.code, out: ambiguous.out }).toEqual({ code: 2, out: "" });
      expect(ambiguous.err).toStartWith("hatch: give exactly one of --feature, --clear\n");
    }
    using stored = new Database(join(dir.path, DATABASE_FILE), { readonly: true });
    expect(stored.query("SELECT package_slug, feature FROM package_access").all()).toEqual([{ package_slug: "agent", feature: "agent.access" }]);
    // Help that was asked for is output, on stdout, for every level of the command tree.
    for (const argv of [["--help"], ["admin", "--help"], ["admin", "user", "add", "--help"]]) {
      const help = await hatchCli(dir.path, argv);
      expect({ code: help.code, err: help.err, out: help.out.startsWith("usage: hatch ") }).toEqual({ code: 0, err: "", out: true });
    }
    const badSetting = await hatchCli(dir.path, ["admin", "setting", "set", "terminalMaxSessions", "300", "--json"]);
    expect(badSetting.code).toBe(1);
    expect(JSON.parse(badSetting.err).error.code).toBe("invalid_setting");
    // A value that is not a whole number is malformed, not out of range: Number("") is 0, which switches the channel fire cap off.
    for (const value of ["", " ", "0x10", "1e1", "2.0", "lots"]) {
      const malformed = await hatchCli(dir.path, ["admin", "setting", "set", "channelInboundFiresPerMinute", value]);
      expect({ code: malformed.code, out: malformed.out }).toEqual({ code: 2, out: "" });
      expect(malformed.err).toStartWith(`hatch: VALUE must be a whole number, not "${value}"\n\nusage: hatch admin setting set KEY VALUE`);
    }
    expect((await hatchCli(dir.path, ["admin", "setting", "get", "channelInboundFiresPerMinute", "--json"])).json().value).toBe(30);
    const weak = await hatchCli(dir.path, ["admin", "user", "add", "--email", "y@example.com", "--password", "short"]);
    expect(weak.code).toBe(1);
    expect(weak.err).toContain("at least 8 characters");
    expect((await hatchCli(dir.path, ["admin", "setting", "get", "terminalMaxSessions", "--json"])).json().value).toBe(8);
  });

  test("a number or time flag that is not written as one (hex, exponent, padded; an impossible date) exits 2 and changes nothing", async () => {
    using dir = tempDataDir();
    const cli = (...argv: string[]) => hatchCli(dir.path, argv, [...adminCommands, ...auditCommands, ...sourceCommands, ...workflowCommands]);
    await cli("admin", "user", "add", "--email", "o@example.com", "--password", "owner pass 1");
    await cli("admin", "project", "add", "--slug", "p", "--name", "P", "--owner", "o@example.com");
    using root = tempDataDir();
    expect((await cli("admin", "source", "add", "--project", "p", "--slug", "docs", "--kind", "local", "--root", `${root.path}`)).code).toBe(0);
    for (const allow of ["r", "rw"]) await cli("admin", "source", "rule", "--project", "p", "--source", "docs", "--role", "member", "--allow", allow);
    const refused: Record<string, string[]> = {
      ruleId: ["admin", "source", "rule", "remove", "--project", "p", "--source", "docs", "--id", "0x2"],
      paddedRuleId: ["admin", "source", "rule", "remove", "--project", "p", "--source", "docs", "--id", " 2"],
      timeout: ["workflow", "add", "--project", "p", "--owner", "o@example.com", "--name", "W", "--command", "true", "--timeout", "1e1"],
      auditLimit: ["admin", "audit", "--limit", "0x10"],
      runsLimit: ["workflow", "runs", "--workflow", "any", "--limit", "2.0"],
      runsBefore: ["workflow", "runs", "--workflow", "any", "--before", "0"],
      sinceNumber: ["admin", "audit", "--since", "1"],
      sinceNoDay: ["admin", "audit", "--since", "2026-02-30"],
      sinceNoHour: ["admin", "audit", "--since", "2026-11-24T25:00Z"],
    };
    for (const [name, argv] of Object.entries(refused)) {
      const result = await cli(...argv);
      expect({ name, code: result.code, out: result.out }).toEqual({ name, code: 2, out: "" });
    }
    expect((await cli("admin", "source", "rule", "list", "--project", "p", "--source", "docs", "--json")).json()).toHaveLength(2);
    expect((await cli("workflow", "list", "--project", "p", "--json")).json()).toEqual([]);
    // The forms the usage names still work: a date, a time in UTC or with an offset, and a plain number.
    for (const since of ["2026-11-24", "2026-11-24T09:30Z", "2026-11-24T09:30:15+01:00", "2026-11-24T09:30"]) {
      expect({ since, code: (await cli("admin", "audit", "--since", since, "--limit", "5")).code }).toEqual({ since, code: 0 });
    }
  });

  test("source add and source rule refuse what the HTTP routes refuse as too long: a label, a root, a rule path", async () => {
    using dir = tempDataDir();
    const cli = (...argv: string[]) => hatchCli(dir.path, argv, [...adminCommands, ...sourceCommands]);
    await cli("admin", "user", "add", "--email", "o@example.com", "--password", "owner pass 1");
    await cli("admin", "project", "add", "--slug", "p", "--name", "P", "--owner", "o@example.com");
    using root = tempDataDir();
    const refused = {
      invalid_label: ["admin", "source", "add", "--project", "p", "--slug", "long-label", "--kind", "local", "--root", `${root.path}`, "--label", "x".repeat(201)],
      invalid_root: ["admin", "source", "add", "--project", "p", "--slug", "long-root", "--kind", "local", "--root", `/${"d/".repeat(2100)}`],
    };
    for (const [code, argv] of Object.entries(refused)) {
      const result = await cli(...argv, "--json");
      expect({ code: result.code, error: JSON.parse(result.err).error.code }).toEqual({ code: 1, error: code });
    }
    expect((await cli("admin", "source", "list", "--project", "p", "--json")).json()).toEqual([]);
    expect((await cli("admin", "source", "add", "--project", "p", "--slug", "docs", "--kind", "local", "--root", `${root.path}`)).code).toBe(0);
    const longPath = await cli("admin", "source", "rule", "--project", "p", "--source", "docs", "--role", "member", "--path", "a/".repeat(2100), "--allow", "r", "--json");
    expect({ code: longPath.code, error: JSON.parse(longPath.err).error.code }).toEqual({ code: 1, error: "invalid_path" });
    expect((await cli("admin", "source", "rule", "list", "--project", "p", "--source", "docs", "--json")).json()).toEqual([]);
  });

  test("a data dir, database or key file that cannot be opened stops a command with exit 1 and one line, no stack trace", async () => {
    using dir = tempDataDir();
    const notADir = join(dir.path, "not-a-dir");
    writeFileSync(notADir, "");
    const args = ["admin", "user", "add", "--email", "a@example.com", "--password", "a password 1"];
    expect(await hatchCliProcess(notADir, args)).toEqual({ code: 1, out: "", err: `hatch: Cannot open the data dir ${notADir}: EEXIST: file already exists, mkdir '${notADir}'\n` });
    const truncatedKey = join(dir.path, "truncated-key");
    mkdirSync(truncatedKey);
    writeFileSync(join(truncatedKey, "secret.key"), "");
    const refused = await hatchCliProcess(truncatedKey, [...args, "--json"]);
    expect({ code: refused.code, out: refused.out, lines: refused.err.split("\n").length }).toEqual({ code: 1, out: "", lines: 2 });
    expect(JSON.parse(refused.err).error).toEqual({ code: "data_dir_unusable", message: expect.stringContaining(`Cannot use the key file ${join(truncatedKey, "secret.key")}: it holds 0 bytes of key`) });
  });

  test("two `user add` of one email at once: one creates it, the other gets user_exists with exit 1", async () => {
    using dir = tempDataDir();
    // Set the data dir up first, so the two race only on the user.
    expect((await hatchCli(dir.path, ["admin", "setting", "set", "terminalMaxSessions", "8"])).code).toBe(0);
    const add = () => hatchCli(dir.path, ["admin", "user", "add", "--email", "race@example.com", "--password", "race pass 1", "--json"]);
    const results = await Promise.all([add(), add()]);
    expect(results.map((r) => r.code).sort()).toEqual([0, 1]);
    const loser = results.find((r) => r.code === 1)!;
    expect(JSON.parse(loser.err).error.code).toBe("user_exists");
  });

  test("a failure that is nobody's input (the database refused a write) stops a command with exit 1 and one line, in JSON under --json", async () => {
    using dir = tempDataDir();
    expect((await hatchCli(dir.path, ["admin", "user", "add", "--email", "o@example.com", "--password", "owner pass 1"])).code).toBe(0);
    {
      using db = new Database(join(dir.path, DATABASE_FILE));
      db.run("CREATE TRIGGER poison BEFORE INSERT ON projects BEGIN SELECT RAISE(ABORT, 'the disk is on fire'); END");
    }
    const args = ["admin", "project", "add", "--slug", "p", "--name", "P", "--owner", "o@example.com"];
    expect(await hatchCliProcess(dir.path, args)).toEqual({ code: 1, out: "", err: "hatch: the disk is on fire\n" });
    const json = await hatchCliProcess(dir.path, [...args, "--json"]);
    expect({ code: json.code, out: json.out, error: JSON.parse(json.err).error }).toEqual({ code: 1, out: "", error: { code: "command_failed", message: "the disk is on fire" } });
  });

  test("the real CLI process exits non-zero with usage on bad arguments", async () => {
    using dir = tempDataDir();
    const result = await hatchCliProcess(dir.path, ["admin", "project", "add", "--slug", "x"]);
    expect(result.code).toBe(2);
    expect(result.err).toContain("usage: hatch admin project add");
  });
});

describe("a password the CLI sets", () => {
  test("user add and user password refuse a password longer than the login takes (1,024 characters), which could never be used", async () => {
    using dir = tempDataDir();
    // What `openssl rand -base64 1024 | hatch admin user add --email E --password-stdin` pipes in: 1,368 characters.
    const long = Buffer.from(crypto.getRandomValues(new Uint8Array(1024))).toString("base64");
    const added = await hatchCli(dir.path, ["admin", "user", "add", "--email", "long@example.com", "--password-stdin", "--json"], adminCommands, `${long}\n`);
    expect({ code: added.code, error: JSON.parse(added.err).error.code }).toEqual({ code: 1, error: "password_too_long" });
    expect((await hatchCli(dir.path, ["admin", "user", "add", "--email", "long@example.com", "--password", "a fine password"])).code).toBe(0);
    const reset = await hatchCli(dir.path, ["admin", "user", "password", "--email", "long@example.com", "--password-stdin", "--json"], adminCommands, `${long}\n`);
    expect({ code: reset.code, error: JSON.parse(reset.err).error.code }).toEqual({ code: 1, error: "password_too_long" });
    // The longest it takes signs in.
    const longest = "p".repeat(1023) + "q";
    expect((await hatchCli(dir.path, ["admin", "user", "password", "--email", "long@example.com", "--password-stdin"], adminCommands, `${longest}\n`)).code).toBe(0);
    await using hatch = await startHatch(loadConfig({ HATCH_PORT: "0", HATCH_COMPANION_PORT: "0", HATCH_DATA_DIR: dir.path }));
    expect((await new HttpClient(hatch.url).post("/api/auth/login", { email: "long@example.com", password: longest })).status).toBe(200);
  });

  test("user add refuses an email longer than the login takes (320 characters)", async () => {
    using dir = tempDataDir();
    const added = await hatchCli(dir.path, ["admin", "user", "add", "--email", `${"a".repeat(64)}@${"b".repeat(300)}.example`, "--password", "a fine password", "--json"]);
    expect({ code: added.code, error: JSON.parse(added.err).error.code }).toEqual({ code: 1, error: "invalid_email" });
  });
});
