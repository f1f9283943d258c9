import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hatchCli } from "../helpers/cli.ts";
import { TerminalClient } from "../helpers/terminal-client.ts";
import { createSession, runAndSee } from "../helpers/terminal.ts";
import { logIn, TEST_PASSWORD } from "../helpers/world.ts";

/** The image's ENTRYPOINT and CMD (exec form), as `docker run` starts them: the first word is the container's PID 1. */
function imageCommand(): string[] {
  const dockerfile = readFileSync("Dockerfile", "utf8");
  const exec = (instruction: string) => {
    const line = dockerfile.split("\n").findLast((l) => l.startsWith(`${instruction} `));
    return line ? (JSON.parse(line.slice(instruction.length + 1)) as string[]) : [];
  };
  return [...exec("ENTRYPOINT"), ...exec("CMD")];
}

/** pid, name, state and parent of every process on the machine. */
function processes(): { pid: number; comm: string; state: string; ppid: number }[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .flatMap((pid) => {
      try {
        const match = /^(\d+) \((.*)\) (\S) (\d+)/.exec(readFileSync(`/proc/${pid}/stat`, "utf8"))!;
        return [{ pid: Number(match[1]), comm: match[2]!, state: match[3]!, ppid: Number(match[4]) }];
      } catch {
        return [];
      }
    });
}

describe("hatch as the Docker image runs it", () => {
  test("processes a session leaves behind are reaped when they end, not kept as zombies by the container's PID 1", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "hatch-container-"));
    mkdirSync(join(dataDir, "home"));
    expect((await hatchCli(dataDir, ["admin", "user", "add", "--email", "owner@example.com", "--password", TEST_PASSWORD])).code).toBe(0);
    expect((await hatchCli(dataDir, ["admin", "project", "add", "--slug", "demo", "--name", "Demo", "--owner", "owner@example.com"])).code).toBe(0);
    // A PID namespace of its own, as a container has: the image's command is its PID 1.
    const container = Bun.spawn(["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", ...imageCommand()], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(dataDir, "home"), HATCH_DATA_DIR: dataDir, HATCH_PORT: "0", HATCH_COMPANION_PORT: "0" },
      stdout: "pipe",
      stderr: "pipe",
      detached: true,
    });
    try {
      const reader = container.stdout.getReader();
      let out = "";
      while (!/companion \(terminal WebSocket\) on (\S+),/.test(out)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the container's command ended: ${out}`);
        out += new TextDecoder().decode(value);
      }
      const owner = await logIn(/web host on (\S+),/.exec(out)![1]!, "owner@example.com", "demo");
      expect((await createSession(owner, { sourceSlug: "container-root", id: "s" })).status).toBe(201);
      const view = await TerminalClient.open(/companion \(terminal WebSocket\) on (\S+),/.exec(out)![1]!, owner, "s");
      await view.control("snapshot");
      // Everyday shell use that orphans a process: a backgrounded command in a subshell.
      await runAndSee(view, "for i in 1 2 3 4 5; do (sleep 0.1 &); done; echo orphaned-$((6*7))", "orphaned-42");
      await Bun.sleep(1500);
      const all = processes();
      const init = all.find((p) => p.ppid === container.pid)!;
      const zombies = all.filter((p) => p.state === "Z" && p.ppid === init.pid).map((p) => p.comm);
      expect({ pid1: init.comm, zombies }).toEqual({ pid1: init.comm, zombies: [] });
    } finally {
      // docker stop: SIGTERM to PID 1, which hands it to hatch, which ends its sessions and removes its cgroups.
      // Then, or if that hangs, SIGKILL: ending the namespace's PID 1 ends everything in it; unshare reaps it and exits.
      for (const p of processes().filter((p) => p.ppid === container.pid)) process.kill(p.pid, "SIGTERM");
      await Promise.race([container.exited, Bun.sleep(10_000)]);
      for (const p of processes().filter((p) => p.ppid === container.pid)) process.kill(p.pid, "SIGKILL");
      await container.exited;
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
