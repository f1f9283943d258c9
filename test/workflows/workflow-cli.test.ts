import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { adminCommands, workflowCommands } from "../../src/cli/index.ts";
import { loadConfig } from "../../src/config.ts";
import { DATABASE_FILE } from "../../src/db/index.ts";
import { startHatch } from "../../src/main.ts";
import { hatchCli, tempDataDir } from "../helpers/cli.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { commandWorkflow, fire, issueToken, memberWithBareRuns } from "../helpers/workflows.ts";
import { startWorld } from "../helpers/world.ts";

const commands = [...adminCommands, ...workflowCommands];
const cli = (dir: string, argv: string[]) => hatchCli(dir, argv, commands);

/** POST the fire endpoint with the real curl, as the README does (fetch where curl is not installed). */
async function curlFire(url: string, token: string, body: string): Promise<{ status: number; body: any }> {
  if (!Bun.which("curl")) {
    const response = await fetch(url, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body });
    return { status: response.status, body: await response.json() };
  }
  const child = Bun.spawn(["curl", "-s", "-w", "\n%{http_code}", "-X", "POST", "-H", `Authorization: Bearer ${token}`, "-H", "Content-Type: application/json", "-d", body, url], { stdout: "pipe" });
  const out = (await new Response(child.stdout).text()).trim().split("\n");
  await child.exited;
  return { status: Number(out.pop()), body: JSON.parse(out.join("\n")) };
}

describe("the workflow CLI", () => {
  test("add a workflow, issue its token, fire it with curl, read the run's answer; rotating makes the old token 401 at once", async () => {
    using dir = tempDataDir();
    await cli(dir.path, ["admin", "user", "add", "--email", "owner@example.com", "--password", "owner pass 1"]);
    await cli(dir.path, ["admin", "project", "add", "--slug", "demo", "--name", "Demo", "--owner", "owner@example.com"]);
    const added = await cli(dir.path, ["workflow", "add", "--project", "demo", "--owner", "owner@example.com", "--name", "Greeter", "--command", `echo "hello, $(tail -n 2 | head -n 1)"`, "--mode", "fresh", "--json"]);
    expect(added.code).toBe(0);
    const workflow = added.json();
    expect(workflow.id).toMatch(/^wf-/);
    expect(workflow).toMatchObject({ name: "Greeter", mode: "fresh", status: "active", runner: { kind: "command" } });
    expect((await cli(dir.path, ["workflow", "list", "--project", "demo"])).out).toContain(`${workflow.id}  Greeter  active  fresh  manual  command`);

    const issued = await cli(dir.path, ["workflow", "token", "rotate", "--workflow", workflow.id]);
    const token = issued.out.split("\n")[0]!;
    expect(token).toMatch(/^wfk1_[A-Za-z0-9_-]{43}$/);
    expect(issued.out).toContain("shown once");

    await using hatch = await startHatch(loadConfig({ HATCH_PORT: "0", HATCH_COMPANION_PORT: "0", HATCH_DATA_DIR: dir.path }));
    const url = `${hatch.url}/api/webhooks/workflow/${workflow.id}/fire`;
    const fired = await curlFire(url, token, '{"text":"Ada"}');
    expect(fired).toEqual({ status: 202, body: { runId: expect.any(String), workflowId: workflow.id, number: 1, status: "queued" } });
    await waitFor(async () => (await cli(dir.path, ["workflow", "runs", "--workflow", workflow.id, "--json"])).json()[0]?.status === "succeeded", "the run");
    const runs = await cli(dir.path, ["workflow", "runs", "--workflow", workflow.id]);
    expect(runs.out.trim()).toBe(`#1 succeeded (webhook) ${fired.body.runId}  "hello, Ada"`);

    const rotated = (await cli(dir.path, ["workflow", "token", "rotate", "--workflow", workflow.id, "--json"])).json();
    expect(rotated.token).not.toBe(token);
    expect((await curlFire(url, token, "{}")).status).toBe(401);
    expect((await curlFire(url, rotated.token, "{}")).status).toBe(202);
  });

  test("runs show the answers and the background results a command reported", async () => {
    using dir = tempDataDir();
    await cli(dir.path, ["admin", "user", "add", "--email", "owner@example.com", "--password", "owner pass 1"]);
    await cli(dir.path, ["admin", "project", "add", "--slug", "demo", "--name", "Demo", "--owner", "owner@example.com"]);
    const events = [{ type: "answer", text: "on it" }, { type: "note", text: "tool call" }, { type: "background", text: "report ready" }];
    const command = `printf '%s\\n' ${events.map((e) => `'${JSON.stringify(e)}'`).join(" ")}`;
    const workflow = (await cli(dir.path, ["workflow", "add", "--project", "demo", "--owner", "owner@example.com", "--name", "Reporter", "--command", command, "--json"])).json();
    await using hatch = await startHatch(loadConfig({ HATCH_PORT: "0", HATCH_COMPANION_PORT: "0", HATCH_DATA_DIR: dir.path }));
    const run = await hatch.workflows.engine.fire({ workflowId: workflow.id, trigger: { id: null, kind: "manual" }, source: { kind: "manual", userId: workflow.createdBy, email: "owner@example.com" } });
    await waitFor(async () => (await cli(dir.path, ["workflow", "runs", "--workflow", workflow.id, "--json"])).json()[0]?.status === "succeeded", "the run");
    expect((await cli(dir.path, ["workflow", "runs", "--workflow", workflow.id])).out.trim()).toBe(`#1 succeeded (manual) ${run.id}  "on it" background: "report ready"`);
  });

  test("runs read page by page: --limit takes the newest, --before the runs below a number", async () => {
    using dir = tempDataDir();
    await cli(dir.path, ["admin", "user", "add", "--email", "owner@example.com", "--password", "owner pass 1"]);
    await cli(dir.path, ["admin", "project", "add", "--slug", "demo", "--name", "Demo", "--owner", "owner@example.com"]);
    const workflow = (await cli(dir.path, ["workflow", "add", "--project", "demo", "--owner", "owner@example.com", "--name", "Pager", "--command", "echo done", "--mode", "fresh", "--json"])).json();
    await using hatch = await startHatch(loadConfig({ HATCH_PORT: "0", HATCH_COMPANION_PORT: "0", HATCH_DATA_DIR: dir.path }));
    for (let i = 0; i < 3; i++) await hatch.workflows.engine.fire({ workflowId: workflow.id, trigger: { id: null, kind: "manual" }, source: { kind: "manual", userId: workflow.createdBy, email: "owner@example.com" } });
    const numbers = async (...flags: string[]) => (await cli(dir.path, ["workflow", "runs", "--workflow", workflow.id, "--json", ...flags])).json().map((r: { number: number }) => r.number);
    expect({ newest: await numbers("--limit", "2"), next: await numbers("--limit", "2", "--before", "2") }).toEqual({ newest: [3, 2], next: [1] });
  });

  test("what members and webhook callers wrote reaches the operator's terminal with its control characters escaped, in text and in JSON", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await memberWithBareRuns(world, project);
    // The command echoes the untrusted fire text to stderr and fails. Names with controls are refused now,
    // but a row saved before that check (or edited by hand) may hold one, and U+202E reverses what follows it.
    const workflow = await commandWorkflow(member, "cat >&2; exit 1");
    world.hatch.sqlite.query("UPDATE workflows SET name = ? WHERE id = ?").run("ok\x1b]0;owned\x07\r\x9b2K\u202e", workflow.id);
    const { token } = await issueToken(member.client, workflow.id);
    const text = "\x1b]52;c;ZWNobyBwd25lZA==\x1b\\\x1b[1A\x1b[2Kall good";
    expect((await fire(world, workflow.id, token, { text })).status).toBe(202);
    const run = (argv: string[]) => hatchCli(world.config.dataDir, argv, commands);
    await waitFor(async () => (await run(["workflow", "runs", "--workflow", workflow.id, "--json"])).json()[0]?.status === "failed", "the run to fail");

    const printed = {
      list: (await run(["workflow", "list", "--project", project.slug])).out,
      runs: (await run(["workflow", "runs", "--workflow", workflow.id])).out,
      json: (await run(["workflow", "list", "--project", project.slug, "--json"])).out,
    };
    const controls = (out: string) => [...out].filter((c) => /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]/.test(c)).length;
    expect({ list: controls(printed.list), runs: controls(printed.runs), json: controls(printed.json) }).toEqual({ list: 0, runs: 0, json: 0 });
    // Escaped, not dropped: the operator sees what was written, and the JSON still reads back as it.
    expect(printed.list).toContain("ok\\x1b]0;owned\\x07\\x0d\\x9b2K\\u202e");
    expect(printed.runs).toContain("\\x1b]52;c;");
    expect(JSON.parse(printed.json)[0].name).toBe("ok\x1b]0;owned\x07\r\x9b2K\u202e");
  });

  test("bad arguments exit 2 with usage and change nothing; a refused command exits 1", async () => {
    using dir = tempDataDir();
    await cli(dir.path, ["admin", "user", "add", "--email", "o@example.com", "--password", "owner pass 1"]);
    await cli(dir.path, ["admin", "user", "add", "--email", "stranger@example.com", "--password", "stranger pass 1"]);
    await cli(dir.path, ["admin", "project", "add", "--slug", "p", "--name", "P", "--owner", "o@example.com"]);
    const base = ["workflow", "add", "--project", "p", "--name", "W", "--command", "true"];
    expect((await cli(dir.path, [...base, "--owner", "o@example.com", "--mode", "sometimes"])).code).toBe(2);
    const stranger = await cli(dir.path, [...base, "--owner", "stranger@example.com"]);
    expect({ code: stranger.code, err: stranger.err }).toEqual({ code: 1, err: "hatch: stranger@example.com is not a member of p\n" });
    // Admins hold no core.execute by default: a workflow running as one would fail every run.
    await cli(dir.path, ["admin", "member", "add", "--project", "p", "--email", "stranger@example.com", "--role", "admin"]);
    const noExecute = await cli(dir.path, [...base, "--owner", "stranger@example.com"]);
    expect({ code: noExecute.code, err: noExecute.err }).toEqual({ code: 1, err: expect.stringContaining("stranger@example.com (role admin) lacks the feature core.execute") });
    // The agent package hidden from the owner's role: every run would be cancelled package-off.
    await cli(dir.path, ["admin", "member", "add", "--project", "p", "--email", "stranger@example.com", "--role", "member"]);
    await cli(dir.path, ["admin", "package-access", "--project", "p", "--package", "agent", "--feature", "agent.access"]);
    const hidden = await cli(dir.path, [...base, "--owner", "stranger@example.com"]);
    expect({ code: hidden.code, err: hidden.err }).toEqual({ code: 1, err: expect.stringContaining("cannot use the agent package") });
    await cli(dir.path, ["admin", "package-access", "--project", "p", "--package", "agent", "--clear"]);
    // Understood but refused (an unknown id): exit 1 with one line, no usage.
    expect(await cli(dir.path, ["workflow", "token", "rotate", "--workflow", "wf-nope"])).toMatchObject({ code: 1, err: 'hatch: Cannot find workflow "wf-nope"\n' });
    expect((await cli(dir.path, ["workflow", "runs"])).err).toContain("--workflow is required");
    for (const seconds of ["0", "3601", "1.5", "soon"]) {
      const refused = await cli(dir.path, [...base, "--owner", "o@example.com", "--timeout", seconds]);
      expect({ code: refused.code, err: refused.err }).toEqual({ code: 2, err: expect.stringContaining("--timeout must be a whole number of seconds from 1 to 3600") });
    }
    expect((await cli(dir.path, ["workflow", "list", "--project", "p", "--json"])).json()).toEqual([]);
  });
  test("reassign makes another member the creator, checked as add checks an owner", async () => {
    using dir = tempDataDir();
    await cli(dir.path, ["admin", "user", "add", "--email", "o@example.com", "--password", "owner pass 1"]);
    await cli(dir.path, ["admin", "user", "add", "--email", "next@example.com", "--password", "next pass 1"]);
    await cli(dir.path, ["admin", "project", "add", "--slug", "p", "--name", "P", "--owner", "o@example.com"]);
    const workflow = (await cli(dir.path, ["workflow", "add", "--project", "p", "--name", "W", "--command", "true", "--owner", "o@example.com", "--json"])).json();
    const stranger = await cli(dir.path, ["workflow", "reassign", "--workflow", workflow.id, "--owner", "next@example.com"]);
    expect({ code: stranger.code, err: stranger.err }).toEqual({ code: 1, err: "hatch: next@example.com is not a member of p\n" });
    await cli(dir.path, ["admin", "member", "add", "--project", "p", "--email", "next@example.com", "--role", "viewer"]);
    const viewer = await cli(dir.path, ["workflow", "reassign", "--workflow", workflow.id, "--owner", "next@example.com"]);
    expect({ code: viewer.code, err: viewer.err }).toEqual({ code: 1, err: expect.stringContaining("next@example.com (role viewer) lacks the feature core.execute") });
    expect((await cli(dir.path, ["workflow", "list", "--project", "p", "--json"])).json()[0].createdBy).toBe(workflow.createdBy);

    await cli(dir.path, ["admin", "member", "add", "--project", "p", "--email", "next@example.com", "--role", "member"]);
    const reassigned = await cli(dir.path, ["workflow", "reassign", "--workflow", workflow.id, "--owner", "next@example.com"]);
    expect(reassigned.code).toBe(0);
    const listed = (await cli(dir.path, ["workflow", "list", "--project", "p", "--json"])).json()[0];
    expect(listed.createdBy).not.toBe(workflow.createdBy);
    expect(reassigned.out).toBe(`workflow W (${workflow.id}) now runs as next@example.com\n`);
    // Reassigning to the creator it has changes nothing, and records nothing (as take-over by the creator).
    const again = await cli(dir.path, ["workflow", "reassign", "--workflow", workflow.id, "--owner", "next@example.com"]);
    expect({ code: again.code, out: again.out }).toEqual({ code: 0, out: reassigned.out });
    using stored = new Database(join(dir.path, DATABASE_FILE), { readonly: true });
    const audited = stored.query("SELECT user_id, target, detail FROM audit_log WHERE action = 'workflow.reassign'").all() as { user_id: string; target: string; detail: string }[];
    expect(audited.map((e) => ({ ...e, detail: JSON.parse(e.detail) }))).toEqual([{ user_id: listed.createdBy, target: workflow.id, detail: { previousCreator: workflow.createdBy, via: "cli" } }]);
  });
});
