import { describe, expect, test } from "bun:test";
import { closeSync, mkdtempSync, openSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { adminCommands, sourceCommands, workflowCommands } from "../../src/cli/index.ts";
import { hatchCli } from "../helpers/cli.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { commandWorkflow, fire, issueToken, memberWithBareRuns } from "../helpers/workflows.ts";
import { startWorld } from "../helpers/world.ts";

const commands = [...adminCommands, ...sourceCommands, ...workflowCommands];

describe("the operator's listings print one row per item", () => {
  test("workflow runs prints one line per run, even when a failed run's error (a command's stderr echoing the fire text) holds line breaks", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await memberWithBareRuns(world, project);
    // The command echoes the untrusted fire text to stderr and fails, as in the README's escaping example.
    const workflow = await commandWorkflow(member, "cat >&2; exit 1");
    const { token } = await issueToken(member.client, workflow.id);
    // A webhook caller writes what reads as a second, succeeded run in the operator's listing.
    const forged = `#2 succeeded (webhook) run-00000000-0000-7000-8000-000000000000  "all good"`;
    expect((await fire(world, workflow.id, token, { text: `hi\n${forged}` })).status).toBe(202);
    const run = (argv: string[]) => hatchCli(world.config.dataDir, argv, commands);
    await waitFor(async () => (await run(["workflow", "runs", "--workflow", workflow.id, "--json"])).json()[0]?.status === "failed", "the run to fail");

    const printed = await run(["workflow", "runs", "--workflow", workflow.id]);
    expect(printed.code).toBe(0);
    // README: "`workflow runs` prints one line per run". One run was made.
    const lines = printed.out.trimEnd().split("\n");
    expect({ lines: lines.length, forgedRow: lines.includes(forged) }).toEqual({ lines: 1, forgedRow: false });
  });

  test("source rule list prints one line per rule, even for a rule path a project admin wrote with a line break", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const admin = await world.signedIn(project, "admin");
    expect((await admin.client.post("/api/sources", { slug: "docs", kind: "local", root: world.tempDir("docs") })).status).toBe(201);
    const forged = "#99 allow rwx to role member on /secrets";
    const added = await admin.client.post("/api/sources/docs/rules", { subjectKind: "role", subject: "viewer", path: `drafts\n${forged}`, effect: "deny", perms: "r" });
    expect(added.status).toBe(201);

    const printed = await hatchCli(world.config.dataDir, ["admin", "source", "rule", "list", "--project", project.slug, "--source", "docs"], commands);
    expect(printed.code).toBe(0);
    const lines = printed.out.trimEnd().split("\n");
    expect({ lines: lines.length, forgedRow: lines.includes(forged) }).toEqual({ lines: 1, forgedRow: false });
  });
});

describe("workflow token rotate", () => {
  test("the fire example it prints does not put the token on a command line (shell history, ps), as --password-stdin keeps passwords off it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "hatch-cli-"));
    try {
      const cli = (argv: string[]) => hatchCli(dir, argv, commands);
      await cli(["admin", "user", "add", "--email", "o@example.com", "--password", "owner pass 1"]);
      await cli(["admin", "project", "add", "--slug", "p", "--name", "P", "--owner", "o@example.com"]);
      const workflow = (await cli(["workflow", "add", "--project", "p", "--owner", "o@example.com", "--name", "W", "--command", "cat", "--json"])).json();
      const issued = await cli(["workflow", "token", "rotate", "--workflow", workflow.id]);
      expect(issued.code).toBe(0);
      const [token, ...rest] = issued.out.trimEnd().split("\n");
      expect(token).toMatch(/^wfk1_/);
      // The token itself is the output (shown once); the suggested command to paste should read it from somewhere, not spell it.
      const example = rest.find((line) => line.includes("curl"));
      expect(example).toBeDefined();
      expect(example!.includes(token!)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("workflow add's malformed values", () => {
  test("are usage errors (exit 2) whatever the project and owner, as workflow runs checks its values first: not a refusal (exit 1) that hides them", async () => {
    const dir = mkdtempSync(join(tmpdir(), "hatch-cli-"));
    try {
      const cli = (argv: string[]) => hatchCli(dir, argv, commands);
      const bad: [string[], string][] = [
        [["--timeout", "0"], "--timeout must be"],
        [["--mode", "fresh-per-fire"], "--mode must be one of"],
      ];
      for (const [values, message] of bad) {
        // A script's first run on a new server: the project is not made yet, or its slug mistyped.
        const refused = await cli(["workflow", "add", "--project", "nope", "--owner", "o@example.com", "--name", "W", "--command", "cat", ...values]);
        expect({ values, code: refused.code, err: refused.err.split("\n")[0] }).toEqual({ values, code: 2, err: expect.stringContaining(message) });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("workflow token rotate whose output cannot be written", () => {
  test("exits non-zero: the old token is already dead and the new one reached nobody (stdout on a full disk)", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const workflow = await commandWorkflow(member, "cat");
    const { token: old } = await issueToken(member.client, workflow.id);
    // `hatch workflow token rotate --workflow ID --json > token.json` on a full disk: every write to stdout fails (ENOSPC).
    const full = openSync("/dev/full", "w");
    try {
      const child = Bun.spawn([process.execPath, "src/cli.ts", "workflow", "token", "rotate", "--workflow", workflow.id, "--json"], {
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HATCH_DATA_DIR: world.config.dataDir },
        stdout: full,
        stderr: "pipe",
      });
      const [err, code] = await Promise.all([new Response(child.stderr).text(), child.exited]);
      const oldTokenStatus = (await fire(world, workflow.id, old, { text: "x" })).status;
      // The rotation happened (the old token answers 401), so a script must learn that it never got the new token.
      expect({ oldTokenStatus, code, stderr: err.trim() }).toEqual({ oldTokenStatus: 401, code: 1, stderr: expect.stringMatching(/.+/) });
    } finally {
      closeSync(full);
    }
  });
});
