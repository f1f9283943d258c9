/**
 * Ending marked processes at shutdown: every session's destroy looks for what
 * its shell left (processes carrying its scratch dir as TMPDIR) by reading
 * /proc/<pid>/environ. A shutdown ends all sessions at once. This prints the
 * time to end N sessions' processes together, beside the baseline of ending
 * one session's, on a host with N marked processes plus what else runs here.
 *
 * Run: ./node_modules/.bin/bun bench/sweep.ts [sessions...]
 */
import { readdirSync } from "node:fs";
import { killMarkedProcesses } from "../src/pty/index.ts";

const SESSIONS = process.argv.slice(2).map(Number);
if (SESSIONS.length === 0) SESSIONS.push(10, 50, 200);
const ROUNDS = 3;

/** Start one process per session, each carrying its session's mark, as a shell left behind would. */
function leftBehind(count: number, round: number): { marks: Set<string>[]; procs: Bun.Subprocess[] } {
  const marks: Set<string>[] = [];
  const procs: Bun.Subprocess[] = [];
  for (let i = 0; i < count; i++) {
    const tmpdir = `/nonexistent/hatch-bench-sweep-${process.pid}-${round}-${i}`;
    marks.push(new Set([`TMPDIR=${tmpdir}`]));
    procs.push(Bun.spawn(["sleep", "1000"], { env: { PATH: process.env.PATH!, TMPDIR: tmpdir }, stdio: ["ignore", "ignore", "ignore"] }));
  }
  return { marks, procs };
}

function processCount(): number {
  return readdirSync("/proc").filter((name) => /^\d+$/.test(name)).length;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

console.log("sessions   processes   one session ms   all sessions together ms   per session ms   ended");
for (const count of SESSIONS) {
  const one: number[] = [];
  const all: number[] = [];
  let ended = 0;
  let processes = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const { marks, procs } = leftBehind(count, round);
    await Bun.sleep(100);
    processes = processCount();
    let started = performance.now();
    ended = (await killMarkedProcesses(marks[0]!)).length;
    one.push(performance.now() - started);
    started = performance.now();
    const killed = await Promise.all(marks.slice(1).map((m) => killMarkedProcesses(m)));
    all.push(performance.now() - started);
    ended += killed.reduce((sum, pids) => sum + pids.length, 0);
    await Promise.all(procs.map((p) => p.exited));
  }
  const together = median(all);
  console.log(
    `${String(count).padStart(8)}   ${String(processes).padStart(9)}   ${median(one).toFixed(1).padStart(14)}   ${together.toFixed(1).padStart(24)}   ${(together / Math.max(1, count - 1)).toFixed(2).padStart(14)}   ${ended}/${count}`,
  );
}
