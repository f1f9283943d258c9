/**
 * Confinement start-up cost: time from spawn to the first output byte, for a
 * bare `bash -c true` (to exit), unconfined bash, Landlock alone and
 * Landlock+bwrap, through pipes and through a real PTY (first prompt byte);
 * and the PTY cases again entering a cgroup of their own first, as every
 * session does where the host gives hatch cgroups (the leaf's mkdir counted).
 * Target: confinement adds under 150 ms.
 *
 * Run: ./node_modules/.bin/bun bench/confine.ts [runs]
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ConfinementMode, defaultLandlockHelper, planConfinedCommand, probeConfinement } from "../src/confine/index.ts";
import { openProcessCgroups } from "../src/pty/index.ts";

/** Enough runs for a stable median and a meaningful p95 on a 2-core machine. */
const DEFAULT_RUNS = 20;
/** Discarded first runs: page cache and Bun's transpiler cache warm up. */
const WARMUP_RUNS = 2;

const runs = Number(process.argv[2] ?? DEFAULT_RUNS);
const base = mkdtempSync(join(tmpdir(), "hatch-bench-"));
const root = join(base, "root");
const scratch = join(base, "scratch");
mkdirSync(root);
mkdirSync(scratch);
chmodSync(scratch, 0o700);
const env = { PATH: "/usr/bin:/bin", HOME: scratch, TMPDIR: scratch, TERM: "xterm", PS1: "$ " };
const probe = await probeConfinement();
if (probe.bwrapPath === null) console.warn("bwrap unavailable: the landlock+bwrap rows are skipped (apt-get install -y bubblewrap)");

interface Launch {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
}

function launch(mode: ConfinementMode | "none", argv: string[]): Launch {
  if (mode === "none") return { argv, env, cwd: root };
  const spec = { roots: [{ path: root, write: true }], scratch, deny: [], cwd: root, argv, env };
  return planConfinedCommand(spec, probe, { helper: defaultLandlockHelper(), preferBwrap: mode === "landlock+bwrap" });
}

async function timeToExit(l: Launch): Promise<number> {
  const start = performance.now();
  const proc = Bun.spawn(l.argv, { env: l.env, cwd: l.cwd, stdio: ["ignore", "ignore", "ignore"] });
  await proc.exited;
  return performance.now() - start;
}

async function timeToFirstByte(l: Launch): Promise<number> {
  const start = performance.now();
  const proc = Bun.spawn(l.argv, { env: l.env, cwd: l.cwd, stdio: ["ignore", "pipe", "ignore"] });
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  await reader.read();
  const elapsed = performance.now() - start;
  reader.releaseLock();
  await proc.exited;
  return elapsed;
}

async function timeToPrompt(l: Launch, start = performance.now()): Promise<number> {
  let first = 0;
  let seen: () => void = () => {};
  const prompted = new Promise<void>((resolve) => (seen = resolve));
  const proc = Bun.spawn(l.argv, {
    env: l.env,
    cwd: l.cwd,
    terminal: { cols: 80, rows: 24, data: () => ((first ||= performance.now() - start), seen()) },
  });
  await prompted;
  proc.terminal!.write("exit\n");
  await proc.exited;
  proc.terminal!.close();
  return first;
}

async function measure(fn: () => Promise<number>): Promise<{ median: number; p95: number }> {
  for (let i = 0; i < WARMUP_RUNS; i++) await fn();
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) samples.push(await fn());
  samples.sort((a, b) => a - b);
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.ceil(q * samples.length) - 1)]!;
  return { median: at(0.5), p95: at(0.95) };
}

const rows: { name: string; median: number; p95: number; baseline?: number }[] = [];
rows.push({ name: "bash -c true (spawn to exit)", ...(await measure(() => timeToExit(launch("none", ["/bin/bash", "-c", "true"])))) });
const modes: (ConfinementMode | "none")[] = ["none", "landlock", ...(probe.bwrapPath ? (["landlock+bwrap"] as const) : [])];
const echo = ["/bin/bash", "-c", "echo ready"];
const interactive = ["/bin/bash", "--norc", "--noprofile", "-i"];
let pipeBase = 0;
let ptyBase = 0;
for (const mode of modes) {
  const r = await measure(() => timeToFirstByte(launch(mode, echo)));
  if (mode === "none") pipeBase = r.median;
  rows.push({ name: `${mode}: echo ready, first byte (pipe)`, ...r, baseline: pipeBase });
}
for (const mode of modes) {
  const r = await measure(() => timeToPrompt(launch(mode, interactive)));
  if (mode === "none") ptyBase = r.median;
  rows.push({ name: `${mode}: bash -i, first prompt byte (PTY)`, ...r, baseline: ptyBase });
}

const cgroups = await openProcessCgroups({ dataDir: base });
if (cgroups.dir === null) console.warn(`no cgroups here (${cgroups.unavailableBecause}): the cgroup rows are skipped`);
else {
  let leaves = 0;
  for (const mode of modes) {
    const r = await measure(async () => {
      const start = performance.now();
      const leaf = cgroups.leaf(`bench-${leaves++}`);
      const l = launch(mode, interactive);
      const first = await timeToPrompt({ ...l, argv: leaf.enter(l.argv) }, start);
      await leaf.end();
      return first;
    });
    rows.push({ name: `${mode} in a cgroup: bash -i, first prompt (PTY)`, ...r, baseline: ptyBase });
  }
  await cgroups.close();
}

console.log(`Landlock ABI ${probe.landlockAbi}, bwrap ${probe.bwrapPath ?? "absent"}, ${runs} runs each (+${WARMUP_RUNS} warm-up)`);
console.log("case".padEnd(56), "median ms".padStart(10), "p95 ms".padStart(8), "added (median)".padStart(15));
for (const r of rows) {
  const added = r.baseline === undefined ? "" : `+${(r.median - r.baseline).toFixed(1)}`;
  console.log(r.name.padEnd(56), r.median.toFixed(1).padStart(10), r.p95.toFixed(1).padStart(8), added.padStart(15));
}
rmSync(base, { recursive: true, force: true });
