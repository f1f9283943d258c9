import { describe, expect, spyOn, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config.ts";
import { startHatch } from "../../src/main.ts";
import { workflowCommands } from "../../src/cli/index.ts";
import { RUN_SCRATCH_FOLDER } from "../../src/workflows/index.ts";
import { hatchCli } from "../helpers/cli.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { logIn, TEST_PASSWORD } from "../helpers/world.ts";
import { firePath, isAlive } from "../helpers/workflows.ts";

/** Start `hatch serve` as its own process on a data dir; resolves with its web URL once it listens. */
async function serveProcess(dataDir: string, env: Record<string, string>) {
  const child = Bun.spawn([process.execPath, "src/cli.ts", "serve"], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HATCH_DATA_DIR: dataDir, HATCH_PORT: "0", HATCH_COMPANION_PORT: "0", ...env },
    stdout: "pipe",
    stderr: "inherit",
  });
  const reader = child.stdout.getReader();
  let printed = "";
  while (!/web host on (\S+),/.test(printed)) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`hatch serve exited before listening: ${printed}`);
    printed += new TextDecoder().decode(value);
  }
  return { child, url: /web host on (\S+),/.exec(printed)![1]! };
}

/**
 * What each run's command leaves: a background child, one that left the
 * process group, one that also cleared its environment (only the run's cgroup
 * still holds it), and the command's shell itself.
 */
const PROCESSES = ["child", "escaped", "cleared", "shell"];

describe("a server that crashed mid-run", () => {
  test("the next start kills what the crashed server's runs left running, bare and under Landlock alone, fails those runs and removes their scratch dirs", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "hatch-crash-"));
    const scratchRoot = join(dataDir, RUN_SCRATCH_FOLDER);
    try {
      await hatchCli(dataDir, ["admin", "user", "add", "--email", "owner@example.com", "--password", TEST_PASSWORD]);
      await hatchCli(dataDir, ["admin", "user", "add", "--email", "member@example.com", "--password", TEST_PASSWORD]);
      await hatchCli(dataDir, ["admin", "project", "add", "--slug", "crash", "--name", "Crash", "--owner", "owner@example.com"]);
      await hatchCli(dataDir, ["admin", "member", "add", "--project", "crash", "--email", "member@example.com", "--role", "member"]);
      // The owner's runs are bare (exec.unconfined); the member's are confined, by Landlock alone here.
      const fired: { runId: string; workflowId: string }[] = [];
      const server = await serveProcess(dataDir, { HATCH_CONFINEMENT: "landlock" });
      try {
        for (const [label, owner] of [["bare", "owner@example.com"], ["landlock", "member@example.com"]] as const) {
          // Each writes its pids to its scratch dir ($TMPDIR), the one place a confined run may write.
          const command = [
            `sleep 300 & echo $! > $TMPDIR/child; setsid sleep 300 & echo $! > $TMPDIR/escaped`,
            `env -i setsid sh -c "echo \\$\\$ > $TMPDIR/cleared; exec sleep 300" < /dev/null > /dev/null 2>&1 &`,
            `echo $$ > $TMPDIR/shell; sleep 300`,
          ].join("\n");
          const added = await hatchCli(dataDir, ["workflow", "add", "--project", "crash", "--owner", owner, "--name", label, "--command", command, "--mode", "fresh", "--json"], workflowCommands);
          const workflowId = added.json().id;
          const { token } = (await hatchCli(dataDir, ["workflow", "token", "rotate", "--workflow", workflowId, "--json"], workflowCommands)).json();
          const answer = await fetch(server.url + firePath(workflowId), { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: "{}" });
          expect(answer.status).toBe(202);
          fired.push({ runId: (await answer.json()).runId, workflowId });
        }
        await waitFor(() => {
          const scratches = readdirSync(scratchRoot);
          return scratches.length === 2 && scratches.every((dir) => PROCESSES.every((p) => existsSync(join(scratchRoot, dir, p))));
        }, "both runs to start their processes");
      } finally {
        server.child.kill("SIGKILL");
        await server.child.exited;
      }
      const pids = readdirSync(scratchRoot).flatMap((dir) => PROCESSES.map((p) => Number(readFileSync(join(scratchRoot, dir, p), "utf8"))));
      expect(pids).toHaveLength(8);
      // Nothing ended them: they outlived the server.
      expect(pids.map(isAlive)).toEqual(pids.map(() => true));

      await using restarted = await startHatch(loadConfig({ HATCH_PORT: "0", HATCH_COMPANION_PORT: "0", HATCH_DATA_DIR: dataDir }));
      await waitFor(() => pids.every((pid) => !isAlive(pid)), "the leftover processes to be killed");
      expect(readdirSync(scratchRoot)).toEqual([]);
      const owner = await logIn(restarted.url, "owner@example.com", "crash");
      for (const { runId, workflowId } of fired) {
        expect((await owner.get(`/api/workflows/${workflowId}/runs/${runId}`)).body).toMatchObject({ status: "failed", error: "The server stopped while this run was working" });
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 30_000);

  test("a stopped run's scratch dir with something mounted in it is kept at the next start, and the mounted data with it", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "hatch-crash-"));
    const precious = mkdtempSync(join(tmpdir(), "hatch-precious-"));
    writeFileSync(join(precious, "keep-me"), "data that lives elsewhere");
    const mounted = join(dataDir, RUN_SCRATCH_FOLDER, "run-mounted", "m");
    mkdirSync(mounted, { recursive: true });
    mkdirSync(join(dataDir, RUN_SCRATCH_FOLDER, "run-plain", "deep"), { recursive: true });
    expect(Bun.spawnSync(["mount", "--bind", precious, mounted]).exitCode).toBe(0);
    const logged: string[] = [];
    const failed = spyOn(console, "error").mockImplementation((...args: unknown[]) => void logged.push(args.map(String).join(" ")));
    try {
      await using _restarted = await startHatch(loadConfig({ HATCH_PORT: "0", HATCH_COMPANION_PORT: "0", HATCH_DATA_DIR: dataDir }));
      failed.mockRestore();
      expect(readFileSync(join(precious, "keep-me"), "utf8")).toBe("data that lives elsewhere");
      expect(readdirSync(join(dataDir, RUN_SCRATCH_FOLDER))).toEqual(["run-mounted"]);
      expect(logged.some((line) => line.includes("run-mounted") && line.includes("is mounted inside it"))).toBe(true);
    } finally {
      failed.mockRestore();
      Bun.spawnSync(["umount", "-l", mounted]);
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(precious, { recursive: true, force: true });
    }
  });
});
