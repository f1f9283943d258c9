import { describe, expect, spyOn, test } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RUN_SCRATCH_FOLDER, runnerEnvironment, type RunEvent, type RunUpdate } from "../../src/workflows/index.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { startWorld } from "../helpers/world.ts";
import { answers, commandWorkflow, fire, groupAlive, isAlive, issueToken, memberWithBareRuns, traceDir, waitForRun } from "../helpers/workflows.ts";

describe("the command runner", () => {
  test("JSON lines with a type are events, streamed as they come; the plain lines make one answer at the end", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const script = [
      `echo '{"type":"note","text":"looking it up"}'`,
      `echo '{"type":"answer","text":"first answer"}'`,
      `echo '{"type":"handoff","text":"a subagent is on it"}'`,
      `echo 'plain line one'`,
      `echo '{"type":"unknown","text":"stays plain"}'`,
      `echo '{"type":"background","text":"the subagent found it"}'`,
      `echo 'plain line two'`,
    ].join("; ");
    const workflow = await commandWorkflow(member, script);
    const { token } = await issueToken(member.client, workflow.id);
    const updates: RunUpdate[] = [];
    world.hatch.workflows.bus.subscribe({ workflowId: workflow.id }, (u) => updates.push(u));
    const run = await waitForRun(member.client, workflow.id, (await fire(world, workflow.id, token)).body.runId);

    const expected: RunEvent[] = [
      { type: "note", text: "looking it up" },
      { type: "answer", text: "first answer" },
      { type: "handoff", text: "a subagent is on it" },
      { type: "background", text: "the subagent found it" },
      { type: "answer", text: 'plain line one\n{"type":"unknown","text":"stays plain"}\nplain line two' },
    ];
    expect(run.status).toBe("succeeded");
    expect(run.events.map(({ type, text }) => ({ type, text }))).toEqual(expected);
    expect(run.events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(updates.map((u) => (u.type === "event" ? u.event.type : u.type === "status" ? u.status : u.outcome.kind))).toEqual([
      "running",
      "note",
      "answer",
      "handoff",
      "background",
      "answer",
      "succeeded",
    ]);
  });

  test("a non-zero exit fails the run: the real error is on the row and in the audit log, and no answer is kept", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo partial; echo 'disk on fire' >&2; exit 3");
    const { token } = await issueToken(member.client, workflow.id);
    const run = await waitForRun(member.client, workflow.id, (await fire(world, workflow.id, token)).body.runId);
    expect(run).toMatchObject({ status: "failed", error: "The command exited with code 3: disk on fire", cancelled: null });
    expect(answers(run)).toEqual([]);
    const audit = world.platform.audit.query({ projectId: workflow.projectId, action: "workflow.run.failed" });
    expect(audit.map((e) => ({ target: e.target, userId: e.userId, detail: e.detail }))).toEqual([
      { target: run.id, userId: member.user.id, detail: { workflowId: workflow.id, error: "The command exited with code 3: disk on fire" } },
    ]);
  });

  test("an error event fails the run with its text, keeping the events before it", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, `echo '{"type":"note","text":"trying"}'; echo '{"type":"error","text":"the tool refused"}'`);
    const { token } = await issueToken(member.client, workflow.id);
    const run = await waitForRun(member.client, workflow.id, (await fire(world, workflow.id, token)).body.runId);
    expect(run).toMatchObject({ status: "failed", error: "the tool refused" });
    expect(run.events.map((e) => e.type)).toEqual(["note", "error"]);
  });

  test("an error event keeps its text on the row and in the audit log when the command then exits non-zero", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    // What a wrapper script does: report why the turn failed, then exit with a failure code.
    const workflow = await commandWorkflow(member, `echo '{"type":"error","text":"the API quota is spent"}'; echo 'usage: tool [-q]' >&2; exit 1`);
    const { token } = await issueToken(member.client, workflow.id);
    const run = await waitForRun(member.client, workflow.id, (await fire(world, workflow.id, token)).body.runId);
    const audit = world.platform.audit.query({ projectId: workflow.projectId, action: "workflow.run.failed" });
    expect({ status: run.status, error: run.error, audited: audit.map((e) => e.detail!.error) }).toEqual({
      status: "failed",
      error: "the API quota is spent",
      audited: ["the API quota is spent"],
    });
  });

  test("at the timeout the whole process group is killed, background children included", async () => {
    await using world = await startWorld();
    const member = await memberWithBareRuns(world, await world.project());
    const dir = traceDir(world);
    const command = `sleep 300 & echo $! > ${dir}/child.pid; wait`;
    const workflow = await commandWorkflow(member, command, { runner: { kind: "command", command, timeoutSeconds: 1 } });
    const { token } = await issueToken(member.client, workflow.id);
    const run = await waitForRun(member.client, workflow.id, (await fire(world, workflow.id, token)).body.runId);
    expect(run).toMatchObject({ status: "failed", error: "The command timed out after 1 s" });
    const child = Number(readFileSync(join(dir, "child.pid"), "utf8"));
    await waitFor(() => !isAlive(child), "the background child to die");
  });

  test("a run that ends leaves nothing running, in its process group or out of it (setsid), so the pool bound holds", async () => {
    // Under bwrap a confined run has its own PID namespace (the child dies with it, and its $! is not a host pid): bare runs there.
    for (const [env, confinedToo] of [[{}, false], [{ HATCH_CONFINEMENT: "landlock" }, true]] as const) {
      await using world = await startWorld(env, { workflows: { poolSize: 1 } });
      // Two projects: memberWithBareRuns grants exec.unconfined to the whole member role of its project.
      const people = [await memberWithBareRuns(world, await world.project()), ...(confinedToo ? [await world.signedIn(await world.project(), "member")] : [])];
      const leavesAChild = "sleep 300 > /dev/null 2>&1 < /dev/null & echo $!";
      // The command ends only once the child is in a session of its own (it writes its pid after setsid), so the group kill cannot reach it.
      const escapesTheGroup = `setsid sh -c 'echo $$ > "$TMPDIR/escaped"; exec sleep 300' > /dev/null 2>&1 < /dev/null & until [ -s "$TMPDIR/escaped" ]; do sleep 0.01; done; cat "$TMPDIR/escaped"`;
      for (const person of people) {
        for (const command of [leavesAChild, escapesTheGroup]) {
          const workflow = await commandWorkflow(person, command, { mode: "fresh" });
          const { token } = await issueToken(person.client, workflow.id);
          const run = await waitForRun(person.client, workflow.id, (await fire(world, workflow.id, token)).body.runId);
          expect(run.status).toBe("succeeded");
          const child = Number(answers(run)[0]);
          await waitFor(() => !isAlive(child), `the child of "${command}" to die`);
        }
      }
    }
  });

  test("what a run started that no environment sweep can find ends with it: a pid-hopping chain, and a process with a cleared environment", async () => {
    const outlived: { bare: boolean; chain: boolean; cleared: boolean }[] = [];
    await using world = await startWorld({ HATCH_CONFINEMENT: "landlock" });
    // Bare, and confined by Landlock alone: in both the run's pids are host pids (under bwrap it has a PID namespace, which ends it).
    const people = [await memberWithBareRuns(world, await world.project()), await world.signedIn(await world.project(), "member")];
    for (const person of people) {
      // The chain runs in a session of its own, every process forking the next and exiting at once: its group id
      // outlives each pid, so it is alive while the chain is. The other process has neither TMPDIR nor HATCH_RUN_ID.
      const command = [
        `setsid bash -c 'echo $$ > "$TMPDIR/group"; hop(){ hop & }; hop' > /dev/null 2>&1 < /dev/null &`,
        `env -i setsid sh -c 'echo $$; exec sleep 303' > "$TMPDIR/cleared" 2>/dev/null < /dev/null &`,
        `until [ -s "$TMPDIR/group" ] && [ -s "$TMPDIR/cleared" ]; do sleep 0.01; done; echo $(cat "$TMPDIR/group") $(cat "$TMPDIR/cleared")`,
      ].join("\n");
      const workflow = await commandWorkflow(person, command, { mode: "fresh" });
      const { token } = await issueToken(person.client, workflow.id);
      const run = await waitForRun(person.client, workflow.id, (await fire(world, workflow.id, token)).body.runId);
      expect({ status: run.status, error: run.error }).toEqual({ status: "succeeded", error: null });
      const [group, cleared] = answers(run)[0]!.trim().split(" ").map(Number) as [number, number];
      try {
        await waitFor(() => !groupAlive(group) && !isAlive(cleared), "the chain and the cleared process to end", 5000).catch(() => {});
        outlived.push({ bare: person === people[0], chain: groupAlive(group), cleared: isAlive(cleared) });
      } finally {
        for (const target of [-group, cleared]) {
          try {
            process.kill(target, "SIGKILL");
          } catch {}
        }
      }
    }
    expect(outlived.filter((c) => c.chain || c.cleared)).toEqual([]);
  }, 60_000);

  test("a command that exits leaving a background child on its stdout succeeds with its answer, and the child ends with the run", async () => {
    for (const env of [{}, { HATCH_CONFINEMENT: "landlock" }] as Record<string, string>[]) {
      await using world = await startWorld(env);
      // Bare, so the answer is a host pid to watch (under bwrap a run has its own PID namespace).
      const member = await memberWithBareRuns(world, await world.project());
      // Neither child redirects stdout, so each holds the run's pipe open for 300 s after the shell exits 0.
      for (const command of ["sleep 300 & echo $!", "nohup sleep 300 2> /dev/null & echo $!"]) {
        const workflow = await commandWorkflow(member, command, { mode: "fresh", runner: { kind: "command", command, timeoutSeconds: 5 } });
        const { token } = await issueToken(member.client, workflow.id);
        const run = await waitForRun(member.client, workflow.id, (await fire(world, workflow.id, token)).body.runId);
        expect({ command, status: run.status, error: run.error }).toEqual({ command, status: "succeeded", error: null });
        const child = Number(answers(run)[0]);
        expect(child).toBeGreaterThan(0);
        await waitFor(() => !isAlive(child), `the child of "${command}" to die`);
      }
    }
  }, 60_000);

  test("an event its run cannot store fails the run at once with the database's error, and the command ends with it", async () => {
    await using world = await startWorld();
    const member = await memberWithBareRuns(world, await world.project());
    world.hatch.sqlite.exec("CREATE TRIGGER poison BEFORE INSERT ON workflow_run_events WHEN NEW.text = 'poison' BEGIN SELECT RAISE(ABORT, 'the disk is on fire'); END");
    const dir = traceDir(world);
    // The note cannot be stored; the command then waits far past the test, still writing now and then.
    const command = `sleep 300 & echo $! > ${dir}/child.pid; echo '{"type":"note","text":"poison"}'; while true; do echo more; sleep 1; done`;
    const workflow = await commandWorkflow(member, command, { runner: { kind: "command", command, timeoutSeconds: 600 } });
    const { token } = await issueToken(member.client, workflow.id);
    const run = await waitForRun(member.client, workflow.id, (await fire(world, workflow.id, token)).body.runId);
    expect(run.status).toBe("failed");
    expect(run.error).toContain("the disk is on fire");
    const child = Number(readFileSync(join(dir, "child.pid"), "utf8"));
    await waitFor(() => !isAlive(child), "the command's child to die");
  });

  test("a runaway writer is stopped at the output cap", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "yes hatch");
    const { token } = await issueToken(member.client, workflow.id);
    const run = await waitForRun(member.client, workflow.id, (await fire(world, workflow.id, token)).body.runId);
    expect(run).toMatchObject({ status: "failed", error: "The command wrote more than 1048576 bytes to stdout" });
  });

  test("past the output cap the pipes close at once: a writer that left the process group (setsid) is read no further, and ends with the run", async () => {
    await using world = await startWorld();
    const member = await memberWithBareRuns(world, await world.project());
    const dir = traceDir(world);
    // 1,600 writes of 64 KiB (100 MiB) on one line, each counted once the pipe took it, from a session of its own.
    writeFileSync(join(dir, "writer.py"), `import sys\nfor n in range(1, 1601):\n    sys.stdout.buffer.write(b"x" * 65536)\n    sys.stdout.flush()\n    open("${dir}/written", "w").write(str(n))\n`);
    const command = `setsid python3 ${dir}/writer.py 2>/dev/null & echo $! > ${dir}/writer.pid; wait`;
    const workflow = await commandWorkflow(member, command, { mode: "fresh" });
    const { token } = await issueToken(member.client, workflow.id);
    const run = await waitForRun(member.client, workflow.id, (await fire(world, workflow.id, token)).body.runId);
    expect(run).toMatchObject({ status: "failed", error: "The command wrote more than 1048576 bytes to stdout" });
    await waitFor(() => !isAlive(Number(readFileSync(join(dir, "writer.pid"), "utf8"))), "the writer to die");
    // The cap is 16 writes; past it the pipe holds one more and the writer blocks (or gets EPIPE) until it is killed.
    // Read on, it would have written hundreds more before anything stopped it.
    expect(Number(readFileSync(join(dir, "written"), "utf8"))).toBeLessThan(32);
  });

  test("a command flooding events is stopped at the cap: the run fails with the cap error, keeps the first 1,000 in order, and the server answers meanwhile", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    // 1 MB of tiny event lines: some 36,000 events, under the stdout cap.
    const workflow = await commandWorkflow(member, `yes '{"type":"note","text":"x"}' | head -c 1000000`);
    const { token } = await issueToken(member.client, workflow.id);
    const seqs: number[] = [];
    const order: string[] = [];
    let answered: Promise<void> | undefined;
    world.hatch.workflows.bus.subscribe({ workflowId: workflow.id }, (update) => {
      if (update.type === "finished") order.push("run finished");
      if (update.type !== "event") return;
      seqs.push(update.event.seq);
      // A request made once the flood has begun must not wait for the run to end.
      answered ??= member.client.get(`/api/workflows/${workflow.id}`).then((response) => void order.push(`request answered ${response.status}`));
    });
    const run = await waitForRun(member.client, workflow.id, (await fire(world, workflow.id, token)).body.runId);
    await answered;
    const firstThousand = Array.from({ length: 1000 }, (_, i) => i + 1);
    const error = "The run streamed more than 1000 events: it was stopped, and the first 1000 are kept";
    expect({ status: run.status, error: run.error, stored: run.events.map((e) => e.seq) }).toEqual({ status: "failed", error, stored: firstThousand });
    expect(seqs).toEqual(firstThousand);
    expect(order).toEqual(["request answered 200", "run finished"]);
    const audit = world.platform.audit.query({ projectId: workflow.projectId, action: "workflow.run.failed" });
    expect(audit.map((e) => e.detail)).toEqual([{ workflowId: workflow.id, error }]);
  });

  test("the command runs in a private scratch dir that is removed after, with its run's ids in the environment", async () => {
    await using world = await startWorld();
    const member = await memberWithBareRuns(world, await world.project());
    const dir = traceDir(world);
    const workflow = await commandWorkflow(member, `pwd > ${dir}/cwd; env > ${dir}/env; echo ok`);
    const { token } = await issueToken(member.client, workflow.id);
    const run = await waitForRun(member.client, workflow.id, (await fire(world, workflow.id, token)).body.runId);
    const cwd = readFileSync(join(dir, "cwd"), "utf8").trim();
    expect(cwd.startsWith(join(world.config.dataDir, "workflow-runs"))).toBe(true);
    await waitFor(() => !existsSync(cwd), "the scratch dir to go");
    const env = readFileSync(join(dir, "env"), "utf8");
    expect(env).toContain(`TMPDIR=${cwd}\n`);
    expect(env).toContain(`HATCH_WORKFLOW_ID=${workflow.id}\n`);
    expect(env).toContain(`HATCH_RUN_ID=${run.id}\n`);
  });

  test("sensitive variables never reach a runner command", () => {
    const env = runnerEnvironment(
      { PATH: "/usr/bin", LANG: "C.UTF-8", HATCH_SECRET_KEY: "k".repeat(40), HATCH_DATA_DIR: "/data", OPENAI_API_KEY: "sk-1", GITHUB_TOKEN: "ghp", DB_PASSWORD: "pw", AWS_ACCESS_KEY_ID: "a", MY_API_KEY: "x", UNSET: undefined },
      { scratch: "/tmp/run-1", runId: "run-1", workflowId: "wf-1" },
    );
    const scratch = "/tmp/run-1";
    expect(env).toEqual({
      PATH: "/usr/bin",
      LANG: "C.UTF-8",
      TERM: "xterm-256color",
      COLORTERM: "truecolor",
      TMPDIR: scratch,
      TMP: scratch,
      TEMP: scratch,
      CLAUDE_CODE_TMPDIR: scratch,
      HATCH_RUN_ID: "run-1",
      HATCH_WORKFLOW_ID: "wf-1",
    });
  });

  test("a run's scratch removal never deletes what the command mounted in it, and its failure does not fail the finished run", async () => {
    await using world = await startWorld();
    const precious = traceDir(world);
    writeFileSync(join(precious, "keep-me"), "data that lives elsewhere");
    const member = await memberWithBareRuns(world, await world.project());
    // A bare run as the service's user (root here) can bind-mount into its scratch dir, as for an NFS export it works on.
    const workflow = await commandWorkflow(member, `mkdir m && mount --bind ${precious} m && ls m`);
    const { token } = await issueToken(member.client, workflow.id);
    const logged: string[] = [];
    const failed = spyOn(console, "error").mockImplementation((...args: unknown[]) => void logged.push(args.map(String).join(" ")));
    try {
      const run = await waitForRun(member.client, workflow.id, (await fire(world, workflow.id, token)).body.runId);
      expect(existsSync(join(precious, "keep-me"))).toBe(true);
      expect({ status: run.status, error: run.error, answers: answers(run) }).toEqual({ status: "succeeded", error: null, answers: ["keep-me"] });
    } finally {
      failed.mockRestore();
      const runScratch = join(world.config.dataDir, RUN_SCRATCH_FOLDER);
      const mounts = Bun.spawnSync(["findmnt", "-rn", "-o", "TARGET"]).stdout.toString().split("\n").filter((t) => t.startsWith(`${runScratch}/`));
      for (const target of mounts.reverse()) Bun.spawnSync(["umount", "-l", target]);
    }
    expect(readFileSync(join(precious, "keep-me"), "utf8")).toBe("data that lives elsewhere");
    // The scratch dir stays, and the operator is told why.
    expect(logged.some((line) => line.includes("is mounted inside it"))).toBe(true);
  });

  test("the runner's shell is chosen at each run: a HATCH_SHELL removed while hatch runs is passed over for bash, as a terminal's is", async () => {
    const dir = mkdtempSync(join(tmpdir(), "hatch-shell-"));
    const shell = join(dir, "opsh");
    writeFileSync(shell, '#!/bin/sh\nexec /bin/bash "$@"\n');
    chmodSync(shell, 0o755);
    try {
      await using world = await startWorld({ HATCH_SHELL: shell });
      const member = await memberWithBareRuns(world, await world.project());
      const workflow = await commandWorkflow(member, "echo ran-$((6*7))");
      const { token } = await issueToken(member.client, workflow.id);
      expect(answers(await waitForRun(member.client, workflow.id, (await fire(world, workflow.id, token)).body.runId))).toEqual(["ran-42"]);
      // The operator's shell is uninstalled (or moved) while hatch runs.
      rmSync(shell);
      const second = await waitForRun(member.client, workflow.id, (await fire(world, workflow.id, token)).body.runId);
      expect({ status: second.status, answers: answers(second), error: second.error }).toEqual({ status: "succeeded", answers: ["ran-42"], error: null });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
