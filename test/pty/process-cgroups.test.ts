import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openProcessCgroups, type ProcessCgroups } from "../../src/pty/index.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { groupAlive, isAlive } from "../helpers/workflows.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A fresh data dir and hatch's subtree for it, both removed after the test. */
async function openFor(log: string[] = []): Promise<{ dataDir: string; cgroups: ProcessCgroups }> {
  const dataDir = mkdtempSync(join(tmpdir(), "hatch-cgroups-"));
  const cgroups = await openProcessCgroups({ dataDir, log: (line) => log.push(line) });
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }), () => cgroups.close());
  // This machine kind gives root a writable cgroup v2 (DESIGN.md); without it every test below would test nothing.
  expect(cgroups.unavailableBecause).toBeNull();
  return { dataDir, cgroups };
}

function leaves(cgroups: ProcessCgroups): string[] {
  return readdirSync(cgroups.dir!, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name);
}

/** Run `script` in bash inside `argv`'s cgroup and wait for it to exit; it leaves its background work behind. */
async function runIn(enter: (argv: string[]) => string[], script: string): Promise<void> {
  const child = Bun.spawn(enter(["/bin/bash", "-c", script]), { stdio: ["ignore", "ignore", "inherit"] });
  expect(await child.exited).toBe(0);
}

describe("a cgroup per session or run", () => {
  test("its end kills everything the program started: a chain that forks and exits at once, and a process with a cleared environment in its own session", async () => {
    const { dataDir, cgroups } = await openFor();
    const leaf = cgroups.leaf("session-a");
    const trace = join(dataDir, "trace");
    // The chain runs in a session of its own, so its group id outlives each of its pids: it is alive while the chain is.
    await runIn(
      leaf.enter,
      `mkdir ${trace}; setsid bash -c 'echo $$ > ${trace}/group; hop(){ hop & }; hop' >/dev/null 2>&1 </dev/null &
       env -i setsid sleep 1000 >/dev/null 2>&1 </dev/null & echo $! > ${trace}/cleared
       until [ -s ${trace}/group ]; do sleep 0.01; done`,
    );
    const group = Number(readFileSync(join(trace, "group"), "utf8"));
    const cleared = Number(readFileSync(join(trace, "cleared"), "utf8"));
    cleanups.push(() => {
      for (const target of [-group, cleared]) {
        try {
          process.kill(target, "SIGKILL");
        } catch {}
      }
    });
    await Bun.sleep(100);
    expect({ chain: groupAlive(group), cleared: isAlive(cleared) }).toEqual({ chain: true, cleared: true });

    await leaf.end();
    // Killed ones may linger a moment as zombies until their new parent reaps them.
    await waitFor(() => !groupAlive(group) && !isAlive(cleared), "the chain and the cleared process to end", 5000);
    expect(leaves(cgroups)).toEqual([]);
    await leaf.end(); // idempotent
  });

  test("a program enters its leaf before it runs, and one that cannot enter it never runs", async () => {
    const { dataDir, cgroups } = await openFor();
    const leaf = cgroups.leaf("run-b");
    const own = Bun.spawn(leaf.enter(["/bin/cat", "/proc/self/cgroup"]), { stdout: "pipe" });
    expect(await new Response(own.stdout).text()).toContain(`/${cgroups.dir!.split("/").at(-1)}/run-b\n`);
    await leaf.end();

    const gone = cgroups.leaf("run-c");
    rmdirSync(join(cgroups.dir!, "run-c"));
    const marker = join(dataDir, "ran");
    const refused = Bun.spawn(gone.enter(["/usr/bin/touch", marker]), { stderr: "pipe" });
    expect({ code: await refused.exited, stderr: await new Response(refused.stderr).text() }).toEqual({
      code: 126,
      stderr: `hatch: cannot enter the cgroup ${join(cgroups.dir!, "run-c", "cgroup.procs")}\n`,
    });
    expect(existsSync(marker)).toBe(false);
  });

  test("what a previous server of the data dir left running is killed when the next one opens the subtree, and the leaves are removed", async () => {
    const { dataDir, cgroups } = await openFor();
    // The first server "crashes": its session's leaf is never ended.
    const trace = join(dataDir, "left");
    await runIn(cgroups.leaf("session-left").enter, `setsid sleep 1000 >/dev/null 2>&1 </dev/null & echo $! > ${trace}`);
    const left = Number(readFileSync(trace, "utf8"));
    cleanups.push(() => {
      try {
        process.kill(left, "SIGKILL");
      } catch {}
    });
    expect(isAlive(left)).toBe(true);

    const log: string[] = [];
    const next = await openProcessCgroups({ dataDir, log: (line) => log.push(line) });
    expect(next.dir).toBe(cgroups.dir);
    await waitFor(() => !isAlive(left), "the leftover process to end", 2000);
    expect(leaves(next)).toEqual([]);
    expect(log).toEqual([`hatch: ended the processes of 1 sessions or runs a previous server left in ${next.dir}`]);
  });

  test("servers on two data dirs in one cgroup never touch each other's processes", async () => {
    const a = await openFor();
    const b = await openFor();
    expect(a.cgroups.dir).not.toBe(b.cgroups.dir);
    const trace = join(b.dataDir, "pid");
    await runIn(b.cgroups.leaf("session-b").enter, `setsid sleep 1000 >/dev/null 2>&1 </dev/null & echo $! > ${trace}`);
    const pid = Number(readFileSync(trace, "utf8"));
    await a.cgroups.leaf("session-a").end();
    await a.cgroups.close();
    // Opening a's subtree again is a start of a's server: it clears a's leftovers, not b's.
    const reopened = await openProcessCgroups({ dataDir: a.dataDir });
    cleanups.push(() => reopened.close());
    expect(isAlive(pid)).toBe(true);
    await b.cgroups.close();
    await waitFor(() => !isAlive(pid), "b's process to end with b's subtree", 2000);
  });

  test("close removes the subtree", async () => {
    const { cgroups } = await openFor();
    cgroups.leaf("session-d");
    await cgroups.close();
    expect(existsSync(cgroups.dir!)).toBe(false);
  });

  test("where the host has no cgroup v2 for the service, or no cgroup.kill, there is no subtree and a leaf changes nothing", async () => {
    const none = await openProcessCgroups({ dataDir: "/data", ownCgroup: null });
    expect({ dir: none.dir, because: none.unavailableBecause }).toEqual({ dir: null, because: "this host has no cgroup v2 hierarchy for the service's cgroup" });
    expect(none.leaf("session-e").enter(["/bin/sh"])).toEqual(["/bin/sh"]);
    await none.leaf("session-e").end();

    // A plain directory stands in for a cgroup v1 or pre-5.14 one: it makes directories, but has no cgroup.kill.
    const plain = mkdtempSync(join(tmpdir(), "hatch-not-cgroupfs-"));
    cleanups.push(() => rmSync(plain, { recursive: true, force: true }));
    const old = await openProcessCgroups({ dataDir: "/data", ownCgroup: plain });
    expect({ dir: old.dir, because: old.unavailableBecause }).toEqual({ dir: null, because: "the kernel has no cgroup.kill (Linux 5.14 or later has)" });
    expect(readdirSync(plain)).toEqual([]);
  });

  test("a data dir reached by another path (a symlink) is the same data dir: the next start still ends what the crashed server left", async () => {
    const { dataDir } = await openFor();
    // The first server ran on the data dir through a symlink (HATCH_DATA_DIR=/srv/hatch -> /var/lib/hatch), and crashed mid-session.
    const link = join(mkdtempSync(join(tmpdir(), "hatch-cgroups-link-")), "data");
    symlinkSync(dataDir, link);
    const first = await openProcessCgroups({ dataDir: link });
    const trace = join(dataDir, "left");
    await runIn(first.leaf("session-left").enter, `setsid sleep 1000 >/dev/null 2>&1 </dev/null & echo $! > ${trace}`);
    const left = Number(readFileSync(trace, "utf8"));
    cleanups.push(
      () => {
        try {
          process.kill(left, "SIGKILL");
        } catch {}
      },
      () => first.close(),
      () => rmSync(join(link, ".."), { recursive: true, force: true }),
    );
    // The next start names the same directory by its real path: the same data dir, the same database, the same claim.
    const next = await openProcessCgroups({ dataDir });
    await waitFor(() => !isAlive(left), "the leftover process to end", 2000).catch(() => {});
    expect({ leftAlive: isAlive(left), sameSubtree: next.dir === first.dir }).toEqual({ leftAlive: false, sameSubtree: true });
  });

  test("a leaf whose program made cgroups of its own below it (hatch or systemd run in a Container Root tab) is still removed at its end", async () => {
    const { dataDir, cgroups } = await openFor();
    const leaf = cgroups.leaf("session-nested");
    const path = join(cgroups.dir!, "session-nested");
    const trace = join(dataDir, "nested");
    // A bare session may write cgroupfs: its program sorts what it starts into cgroups below its own, as a nested hatch does.
    await runIn(leaf.enter, `mkdir ${path}/inner; setsid sh -c 'echo 0 > ${path}/inner/cgroup.procs; exec sleep 1000' >/dev/null 2>&1 </dev/null & echo $! > ${trace}; until grep -q inner /proc/$(cat ${trace})/cgroup; do sleep 0.01; done`);
    const pid = Number(readFileSync(trace, "utf8"));
    cleanups.push(() => {
      try {
        process.kill(pid, "SIGKILL");
      } catch {}
      for (const dir of [join(path, "inner"), path]) {
        try {
          rmdirSync(dir);
        } catch {}
      }
    });
    await leaf.end();
    await waitFor(() => !isAlive(pid), "the nested process to end", 2000).catch(() => {});
    const afterEnd = leaves(cgroups);
    // And at the server's stop the subtree goes.
    await cgroups.close();
    expect({ alive: isAlive(pid), leavesAfterEnd: afterEnd, subtreeAfterStop: existsSync(cgroups.dir!) }).toEqual({ alive: false, leavesAfterEnd: [], subtreeAfterStop: false });
  });
});
