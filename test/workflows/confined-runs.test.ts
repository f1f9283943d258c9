import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
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
