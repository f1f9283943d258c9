import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSession, localSource, TERMINAL } from "../helpers/terminal.ts";
import { answers, commandWorkflow, fire, issueToken, waitForRun } from "../helpers/workflows.ts";
import { startWorld } from "../helpers/world.ts";

describe("confined runs", () => {
  test("a run's command is confined: it writes only its scratch dir, cannot read the data dir, and has no network", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const outside = join(world.tempDir("outside"), "escaped");
    const command = [
      `touch ${outside} 2>/dev/null && echo outside-written || echo outside-denied`,
      `touch "$TMPDIR/ok" && echo scratch-written`,
      `cat ${join(world.config.dataDir, "secret.key")} >/dev/null 2>&1 && echo key-read || echo key-denied`,
      `(echo > /dev/tcp/127.0.0.1/${new URL(world.hatch.url).port}) 2>/dev/null && echo tcp-open || echo tcp-denied`,
    ].join("; ");
    const workflow = await commandWorkflow(member, command);
    const { token } = await issueToken(member.client, workflow.id);
    const run = await waitForRun(member.client, workflow.id, (await fire(world, workflow.id, token)).body.runId);
    expect(run.status).toBe("succeeded");
    expect(answers(run)).toEqual(["outside-denied\nscratch-written\nkey-denied\ntcp-denied"]);
    expect(existsSync(outside)).toBe(false);
  });

  test("the .env files of the directory the service started in are hidden from confined tabs and runs", async () => {
    for (const confinement of ["landlock", "auto"]) {
      // Started from a directory holding the operator's .env, as `npm start` in a checkout would be.
      const startDir = mkdtempSync(join(tmpdir(), "hatch-start-"));
      writeFileSync(join(startDir, ".env"), "HATCH_SECRET_KEY=operator-secret-material-0123456789abcdef\n");
      writeFileSync(join(startDir, ".env.local"), "OPENAI_API_KEY=sk-operator\n");
      writeFileSync(join(startDir, "notes.txt"), "public-notes\n");
      const before = process.cwd();
      process.chdir(startDir);
      await using world = await startWorld({ HATCH_CONFINEMENT: confinement }).finally(() => process.chdir(before));
      world.onDispose(() => rmSync(startDir, { recursive: true, force: true }));
      const project = await world.project();
      const member = await world.signedIn(project, "member");
      localSource(world, project, "docs", { member: "rwx" });
      // The input screen refuses an exec naming the service's .env files; the sandbox is what is tested, so python reads them.
      const probe = `/usr/bin/python3 -c '
import sys
for name in [".e" + "nv", ".e" + "nv.local", "notes.txt"]:
    try: print(open(sys.argv[1] + "/" + name).read(), end="")
    except OSError: print(name + "-denied")
' ${startDir}`;
      await createSession(member.client, { sourceSlug: "docs", id: "s" });
      const tab = await member.client.post(`${TERMINAL}/sessions/s/exec`, { command: probe });
      // bwrap gives a tab its own /tmp, so the directory's other files are only visible with Landlock alone.
      const notes = confinement === "landlock" ? "public-notes" : "notes.txt-denied";
      expect({ confinement, output: tab.body.output }).toEqual({ confinement, output: `.env-denied\n.env.local-denied\n${notes}\n` });
      const workflow = await commandWorkflow(member, probe);
      const { token } = await issueToken(member.client, workflow.id);
      const run = await waitForRun(member.client, workflow.id, (await fire(world, workflow.id, token)).body.runId);
      // A run reads less than a tab (nothing of /tmp): only the .env files matter here.
      expect({ confinement, lines: answers(run)[0]!.split("\n").slice(0, 2) }).toEqual({ confinement, lines: [".env-denied", ".env.local-denied"] });
    }
  });

  test("a creator holding exec.unconfined gets the bare spawn, as in a source tab", async () => {
    await using world = await startWorld();
    const project = await world.project();
    world.platform.roles.grant(project.id, "member", "exec.unconfined");
    const member = await world.signedIn(project, "member");
    const outside = join(world.tempDir("outside"), "written");
    const workflow = await commandWorkflow(member, `touch ${outside} && echo bare`);
    const { token } = await issueToken(member.client, workflow.id);
    const run = await waitForRun(member.client, workflow.id, (await fire(world, workflow.id, token)).body.runId);
    expect(answers(run)).toEqual(["bare"]);
    expect(existsSync(outside)).toBe(true);
  });
});
