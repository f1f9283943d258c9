import { describe, expect, test } from "bun:test";
import { auditCommands } from "../../src/cli/index.ts";
import { Audit, MAX_AUDIT_PAGE } from "../../src/platform/index.ts";
import { hatchCli, hatchCliProcess } from "../helpers/cli.ts";
import { startWorld, type World } from "../helpers/world.ts";

/** `hatch admin audit …` in-process against the world's data dir. */
const audit = (world: World, ...argv: string[]) => hatchCli(world.config.dataDir, ["admin", "audit", ...argv], auditCommands);

/** A project whose admin changed a setting over HTTP, and a member whose password the operator set (an entry of no project). */
async function auditedWorld() {
  const world = await startWorld();
  const project = await world.project();
  const admin = await world.signedIn(project, "admin");
  const member = await world.signedIn(project, "member");
  expect((await admin.client.put("/api/settings/terminalMaxSessions", { value: 3 })).status).toBe(200);
  const reset = await hatchCli(world.config.dataDir, ["admin", "user", "password", "--email", member.user.email, "--password-stdin"], undefined, "new pass 12\n");
  expect(reset.code).toBe(0);
  return { world, project, admin, member };
}

describe("hatch admin audit", () => {
  test("shows every entry newest first, with the user's email and the project's slug beside their ids", async () => {
    const { world, project, admin, member } = await auditedWorld();
    await using _ = world;
    const all = await audit(world, "--json");
    expect(all.code).toBe(0);
    const entries = all.json<any[]>();
    expect(entries.map((e) => e.action)).toEqual(["user.password", "settings.update"]);
    expect(entries[0]).toMatchObject({ userId: member.user.id, userEmail: member.user.email, projectId: null, projectSlug: null, target: member.user.email });
    expect(entries[1]).toMatchObject({ userId: admin.user.id, userEmail: admin.user.email, projectId: project.id, projectSlug: project.slug, target: "terminalMaxSessions", detail: { value: 3 } });

    const human = await audit(world);
    expect(human.out.trimEnd().split("\n")).toEqual([
      expect.stringMatching(new RegExp(`^#\\d+  \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z  user\\.password  server-wide  user ${member.user.email}  target ${member.user.email}  \\{"signedOut":1,"via":"cli"\\}$`)),
      expect.stringMatching(new RegExp(`^#\\d+  \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z  settings\\.update  ${project.slug}  user ${admin.user.email}  target terminalMaxSessions  \\{"value":3\\}$`)),
    ]);
  });

  test("filters: --server for entries of no project (which /api/audit never shows), --project, --action, --since, --limit", async () => {
    const { world, project, admin } = await auditedWorld();
    await using _ = world;
    const actions = async (...argv: string[]) => (await audit(world, "--json", ...argv)).json<any[]>().map((e) => e.action);
    expect(await actions("--server")).toEqual(["user.password"]);
    expect(await actions("--project", project.slug)).toEqual(["settings.update"]);
    expect((await admin.client.get("/api/audit")).body.entries.map((e: any) => e.action)).toEqual(["settings.update"]);
    expect(await actions("--action", "user.password")).toEqual(["user.password"]);
    expect(await actions("--limit", "1")).toEqual(["user.password"]);
    expect(await actions("--since", "2000-01-01")).toEqual(["user.password", "settings.update"]);
    expect(await actions("--since", new Date(Date.now() + 60_000).toISOString())).toEqual([]);
    expect((await audit(world, "--since", new Date(Date.now() + 60_000).toISOString())).out).toBe("(no entries)\n");
  });

  test("bad arguments are usage errors (exit 2); an unknown project is project_not_found (exit 1)", async () => {
    await using world = await startWorld();
    const usage: [string[], string][] = [
      [["--project", "p", "--server"], "give at most one of --project, --server"],
      [["--limit", "0"], '--limit must be 1 to 1000, not "0"'],
      [["--limit", "1001"], '--limit must be 1 to 1000, not "1001"'],
      [["--limit", "ten"], '--limit must be 1 to 1000, not "ten"'],
      [["--since", "yesterday"], '--since must be an ISO 8601 time (2026-11-24 or 2026-11-24T09:30Z), not "yesterday"'],
      [["--action", ""], "--action needs an action name, e.g. user.password"],
    ];
    for (const [argv, message] of usage) {
      const refused = await audit(world, ...argv);
      expect({ argv, code: refused.code, out: refused.out }).toEqual({ argv, code: 2, out: "" });
      expect(refused.err).toStartWith(`hatch: ${message}\n`);
    }
    const unknown = await audit(world, "--project", "nope", "--json");
    expect({ code: unknown.code, error: JSON.parse(unknown.err).error.code }).toEqual({ code: 1, error: "project_not_found" });
  });

  test("is a command of the real hatch executable", async () => {
    const { world, member } = await auditedWorld();
    await using _ = world;
    const run = await hatchCliProcess(world.config.dataDir, ["admin", "audit", "--server", "--json"]);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.out)).toEqual([expect.objectContaining({ action: "user.password", userEmail: member.user.email })]);
  });
});

describe("hatch admin audit reaches the whole log", () => {
  test("past the newest 1,000 entries, as GET /api/audit does with before=: the server-wide entries have no other reader", async () => {
    await using world = await startWorld();
    const log = new Audit(world.platform.db);
    // A password reset long ago, then a busy stretch of 1,000 newer server-wide entries (passwords set, users added).
    world.hatch.sqlite.transaction(() => {
      log.write({ action: "user.password", target: "leaked@example.com", detail: { signedOut: 3, via: "cli" } });
      for (let i = 0; i < MAX_AUDIT_PAGE; i++) log.write({ action: "user.add", target: `u${i}@example.com`, detail: { via: "cli" } });
    })();
    const page = await audit(world, "--server", "--limit", String(MAX_AUDIT_PAGE), "--json");
    expect(page.code).toBe(0);
    const entries = page.json<{ id: number; target: string }[]>();
    expect(entries.map((e) => e.target)).not.toContain("leaked@example.com");
    // The next page, from the last entry's id, as the README's paging of /api/audit and `workflow runs --before` do.
    const next = await audit(world, "--server", "--before", String(entries.at(-1)!.id), "--json");
    expect({ code: next.code, err: next.err.split("\n")[0] }).toEqual({ code: 0, err: "" });
    expect(next.json<{ target: string }[]>().map((e) => e.target)).toEqual(["leaked@example.com"]);
  });
});
