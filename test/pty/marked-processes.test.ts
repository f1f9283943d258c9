import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { killMarkedProcesses } from "../../src/pty/index.ts";
import { isAlive } from "../helpers/workflows.ts";

/** Live pids whose environment holds `mark` (what the test checks the kill against, read on its own). */
function carrying(mark: string): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/environ`, "latin1").split("\0").includes(mark) && isAlive(pid);
      } catch {
        return false;
      }
    });
}

describe("ending marked processes", () => {
  test("a tree that keeps forking children into sessions of their own is ended whole, and nothing unmarked is touched", async () => {
    const id = `fork-loop-${process.pid}`;
    const mark = `HATCH_RUN_ID=${id}`;
    // A command that started 100 setsid children and keeps starting more: no environment rewriting, just speed.
    const loop = Bun.spawn(["bash", "-c", "for i in $(seq 100); do setsid sleep 1000 & done; setsid bash -c 'while :; do setsid sleep 1000 & done' & wait"], {
      env: { PATH: process.env.PATH!, HATCH_RUN_ID: id },
      stdio: ["ignore", "ignore", "ignore"],
      detached: true,
    });
    const bystander = Bun.spawn(["sleep", "1000"], { env: { PATH: process.env.PATH!, HATCH_RUN_ID: `${id}-other` }, detached: true });
    try {
      // Wait for the loop to be under way: many more children than the first hundred.
      for (let i = 0; i < 500 && carrying(mark).length < 150; i++) await Bun.sleep(20);
      const killed = await killMarkedProcesses(new Set([mark]));
      expect(killed.length).toBeGreaterThan(100);
      await Bun.sleep(100);
      expect(carrying(mark)).toEqual([]);
      expect(isAlive(bystander.pid)).toBe(true);
    } finally {
      for (const pid of carrying(mark)) process.kill(pid, "SIGKILL");
      loop.kill("SIGKILL");
      bystander.kill("SIGKILL");
    }
  });

  test("requests made together (a shutdown ends every session at once) each end exactly their own processes", async () => {
    const marks = ["a", "b", "c"].map((name) => `TMPDIR=/nonexistent/hatch-test-${process.pid}-${name}`);
    const spawnMarked = (mark: string) =>
      Bun.spawn(["sleep", "1000"], { env: { PATH: process.env.PATH!, TMPDIR: mark.slice("TMPDIR=".length) }, stdio: ["ignore", "ignore", "ignore"] });
    const procs = marks.map((mark) => [spawnMarked(mark), spawnMarked(mark)]);
    const bystander = Bun.spawn(["sleep", "1000"], { env: { PATH: process.env.PATH!, TMPDIR: `/nonexistent/hatch-test-${process.pid}-d` } });
    try {
      for (let i = 0; i < 250 && marks.some((mark) => carrying(mark).length < 2); i++) await Bun.sleep(20);
      const first = killMarkedProcesses(new Set([marks[0]!]));
      // The others arrive while the first one's passes are under way.
      await Bun.sleep(0);
      const [a, b, c] = await Promise.all([first, killMarkedProcesses(new Set([marks[1]!])), killMarkedProcesses(new Set([marks[2]!]))]);
      expect([a, b, c].map((pids) => pids.sort())).toEqual(procs.map((pair) => pair.map((p) => p.pid).sort()));
      await Promise.all(procs.flat().map((p) => p.exited));
      expect(procs.flat().map((p) => p.signalCode)).toEqual(Array(6).fill("SIGKILL"));
      expect(isAlive(bystander.pid)).toBe(true);
    } finally {
      for (const p of [...procs.flat(), bystander]) p.kill("SIGKILL");
    }
  });
});
