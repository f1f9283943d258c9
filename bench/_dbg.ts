/**
 * Terminal performance, each figure beside a baseline measured in the same run:
 *
 * 1. Output throughput (MB/s): a command printing a fixed amount, typed into a
 *    hatch session over a real WebSocket (the client acks every ACK_EVERY_BYTES,
 *    as the widget does) and timed from sending the command until the marker it
 *    prints last arrives; baseline: the same command typed into bash on a bare
 *    PTY (`bunTerminalBackend`, no server). Target: hatch >= 75% of bare.
 * 2. Keystroke echo round trip: one key typed at a bash prompt until its echo
 *    arrives, 500 times; hatch over the WebSocket, bare `bunTerminalBackend` and
 *    bare `bunPtyBackend` (bun-pty, to show why it is not the default).
 *    Target: hatch p50 < 0.5 ms, p99 < 1.5 ms.
 * 3. Reconnect snapshot: opening a WebSocket until the `snapshot` message, for a
 *    session holding 10,000 lines of scrollback; baseline: an empty session.
 *    Target: < 100 ms.
 * 4. Server memory per idle session: RSS and JS heap (after a full GC) before
 *    and after creating 100 idle Container Root sessions, divided by 100. The
 *    shells are separate processes and are not counted: this is hatch's own cost.
 *    It runs in a fresh child process, so the heap freed by sections 1-3 cannot
 *    absorb the new sessions. Target: < 2 MB per session.
 *
 * The WebSocket client runs in this process, on the server's event loop, so
 * hatch's figures include the client's work; a browser does that elsewhere.
 * Loopback only, bounded loops; nothing is asserted.
 *
 * Run: ./node_modules/.bin/bun bench/terminal.ts
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { ACK_EVERY_BYTES, bunPtyBackend, bunTerminalBackend, type PtyBackend } from "../src/pty/index.ts";
import { createSession } from "../test/helpers/terminal.ts";
import { waitFor } from "../test/helpers/wait-for.ts";
import { World, type Person } from "../test/helpers/world.ts";

/** Bytes of the long-line workload: about a second of output on a bare PTY, so start-up is noise. */
const THROUGHPUT_BYTES = 50_000_000;
/** Lines of the short-line workload (`seq`): ~35 MB once the tty adds a CR to each line. */
const THROUGHPUT_LINES = 4_000_000;
/** Rounds per throughput workload, bare and hatch interleaved; the median is printed. */
const THROUGHPUT_ROUNDS = 3;
/** Keys timed per echo path. */
const ECHO_KEYS = 500;
/** Keys typed first and not timed (JIT, first readline redraws). */
const ECHO_WARMUP_KEYS = 50;
/** Keys per line before Ctrl+U: the line stays on one 80-column row, so each echo is the key alone. */
const KEYS_PER_LINE = 30;
/** Lines printed before the reconnect: more than the 10,000-line default scrollback, so it is full. */
const SNAPSHOT_FILL_LINES = 12_000;
/** Reconnects timed per session. */
const SNAPSHOT_REPEATS = 10;
/** Idle sessions whose memory is measured. */
const IDLE_SESSIONS = 100;
/** Max Sessions for the memory section: the default (8) would refuse the 100 sessions. */
const MAX_SESSIONS = 256;
/** Text kept across reads, so a marker split between two chunks is still found. */
const TAIL_CHARS = 64;
/** Longest wait for any one condition: a stuck run fails instead of hanging the bench. */
const WAIT_MS = 60_000;
/** The bare shells' prompt. */
const BARE_PROMPT = "$ ";
/** Printed after each timed command; the shell computes it, so the echoed command line never matches. */
const END_COMMAND = "echo END-$((6*7))";
const END_MARKER = "END-42";
/** The timed key, and a key whose echo marks that a Ctrl+U redraw has fully arrived (no prompt ends in it). */
const KEY = "a";
const SYNC_KEY = "z";
const CTRL_U = "\x15";
/** argv[2] that makes this script the memory section's child process. */
const MEMORY_CHILD = "--idle-session-memory";

const latin1 = new TextDecoder("latin1");

/**
 * Counts output bytes and wakes one waiter on the chunk that satisfies it,
 * with the chunk's arrival time (taken before any promise machinery runs).
 */
class OutputWatch {
  bytes = 0;
  #tail = "";
  #waiter: { test: (recent: string) => boolean; resolve: (at: number) => void } | null = null;

  feed(chunk: Uint8Array): void {
    const at = performance.now();
    this.bytes += chunk.length;
    // Only the end of a chunk is decoded: the client must not cost more than the server per byte.
    const recent = this.#tail + latin1.decode(chunk.length > TAIL_CHARS ? chunk.subarray(chunk.length - TAIL_CHARS) : chunk);
    this.#tail = recent.slice(-TAIL_CHARS);
    const waiter = this.#waiter;
    if (waiter?.test(recent)) {
      this.#waiter = null;
      waiter.resolve(at);
    }
  }

  /** Resolves with the arrival time of the chunk after which `test(output since this call)` holds. */
  next(test: (recent: string) => boolean = () => true): Promise<number> {
    if (this.#waiter) throw new Error("Cannot wait twice on one output stream");
    // Output from before the wait must not satisfy it (the previous run's marker).
    this.#tail = "";
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`Timed out after ${WAIT_MS} ms waiting for output`)), WAIT_MS);
      this.#waiter = { test, resolve: (at) => (clearTimeout(timer), resolve(at)) };
    });
  }
}

/** Something keys can be typed into and output read from: a bare PTY or a hatch WebSocket. */
interface Shell {
  readonly output: OutputWatch;
  type(data: string): void;
}

/** bash without rc files on a bare PTY from `backend`, in an empty HOME; resolves at its first prompt. */
async function bareShell(backend: PtyBackend): Promise<Shell & AsyncDisposable> {
  const home = mkdtempSync(join(tmpdir(), "hatch-bench-home-"));
  const output = new OutputWatch();
  const prompted = output.next((recent) => recent.endsWith(BARE_PROMPT));
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, TERM: "xterm-256color", PS1: BARE_PROMPT };
  const pty = backend({ argv: ["bash", "--norc", "--noprofile"], cwd: home, env, cols: 80, rows: 24, onData: (chunk) => output.feed(chunk) });
  await prompted;
  return {
    output,
    type: (data) => pty.write(data),
    async [Symbol.asyncDispose]() {
      pty.kill("SIGHUP");
      await pty.exited;
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/**
 * A lean terminal WebSocket client (the test helper's TerminalClient decodes
 * every frame to text, which would bill the client's work to hatch). It acks
 * like the widget and records when the snapshot arrived and how big it was.
 */
class HatchTerminal implements Shell, AsyncDisposable {
  readonly output = new OutputWatch();
  snapshot = { at: 0, frameBytes: 0, lines: 0 };
  readonly #ws: WebSocket;
  readonly #closed: Promise<void>;
  #unacked = 0;

  private constructor(ws: WebSocket, onSnapshot: () => void) {
    this.#ws = ws;
    this.#closed = new Promise((resolve) => ws.once("close", () => resolve()));
    ws.on("message", (data: Buffer, isBinary: boolean) => {
      if (isBinary) return this.#output(data);
      const message = JSON.parse(data.toString());
      if (message.type !== "snapshot") return;
      this.snapshot = { at: performance.now(), frameBytes: data.length, lines: message.data.split("\n").length };
      onSnapshot();
    });
  }

  /** Open `/ws/terminal/<id>` as `person`; resolves once the first snapshot has arrived. */
  static async open(world: World, person: Person, sessionId: string): Promise<HatchTerminal> {
    const url = `${world.hatch.companionUrl.replace(/^http/, "ws")}/ws/terminal/${sessionId}`;
    const ws = new WebSocket(url, { headers: { cookie: person.client.cookieHeader } });
    let snapshotSeen = () => {};
    const snapshot = new Promise<void>((resolve) => (snapshotSeen = resolve));
    const terminal = new HatchTerminal(ws, snapshotSeen);
    const closedEarly = terminal.#closed.then(() => Promise.reject(new Error(`Cannot attach to session "${sessionId}": the socket closed`)));
    await Promise.race([snapshot, closedEarly]);
    return terminal;
  }

  type(data: string): void {
    this.#ws.send(JSON.stringify({ type: "input", data }));
  }

  #output(chunk: Buffer): void {
    this.output.feed(chunk);
    this.#unacked += chunk.length;
    if (this.#unacked < ACK_EVERY_BYTES) return;
    this.#ws.send(JSON.stringify({ type: "ack", bytes: this.#unacked }));
    this.#unacked = 0;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.#ws.close();
    await this.#closed;
  }
}

/** Create a Container Root session as `person`, or fail loudly. */
async function newSession(person: Person, id: string): Promise<void> {
  const created = await createSession(person.client, { sourceSlug: "container-root", id });
  if (created.status !== 201) throw new Error(`Cannot create session "${id}": ${created.status} ${JSON.stringify(created.body)}`);
}

/** Clear the line; the sync key's echo comes after every byte of Ctrl+U's redraw. */
async function clearLine(shell: Shell): Promise<void> {
  const synced = shell.output.next((recent) => recent.endsWith(SYNC_KEY));
  shell.type(CTRL_U + SYNC_KEY);
  await synced;
}

/** Type `command` followed by the end marker; bytes received and ms until the marker arrived. */
async function timeCommand(shell: Shell, command: string): Promise<{ bytes: number; ms: number }> {
  await clearLine(shell);
  shell.type(CTRL_U);
  const before = shell.output.bytes;
  const done = shell.output.next((recent) => recent.includes(END_MARKER));
  const sent = performance.now();
  shell.type(`${command}; ${END_COMMAND}\r`);
  const at = await done;
  return { bytes: shell.output.bytes - before, ms: at - sent };
}

/** Echo round trips of single keys at the prompt, in ms. */
async function echoRoundTrips(shell: Shell): Promise<number[]> {
  const samples: number[] = [];
  await clearLine(shell);
  for (let i = 0; i < ECHO_WARMUP_KEYS + ECHO_KEYS; i++) {
    if (i > 0 && i % KEYS_PER_LINE === 0) await clearLine(shell);
    // After the sync, the only output due is this key's echo.
    const echoed = shell.output.next();
    const sent = performance.now();
    shell.type(KEY);
    const at = await echoed;
    if (i >= ECHO_WARMUP_KEYS) samples.push(at - sent);
  }
  shell.type(CTRL_U);
  return samples;
}

function quantile(samples: readonly number[], q: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** Print rows as a table with padded columns (first column left-aligned). */
function table(rows: (string | number)[][]): void {
  const cells = rows.map((row) => row.map(String));
  const widths = cells[0]!.map((_, i) => Math.max(...cells.map((row) => row[i]?.length ?? 0)));
  for (const row of cells) console.log(row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join("   "));
}

const ms = (value: number) => value.toFixed(3);
const mb = (bytes: number) => (bytes / 1e6).toFixed(2);

async function throughputSection(world: World, owner: Person): Promise<void> {
  const workloads = [
    { name: `long lines: head -c ${THROUGHPUT_BYTES} /dev/zero | tr`, command: `head -c ${THROUGHPUT_BYTES} /dev/zero | tr '\\0' y` },
    { name: `short lines: seq 1 ${THROUGHPUT_LINES}`, command: `seq 1 ${THROUGHPUT_LINES}` },
  ];
  await newSession(owner, "throughput");
  console.log("tp"); await using bare = await bareShell(bunTerminalBackend); console.log("bare ok");
  await using hatch = await HatchTerminal.open(world, owner, "throughput");
  const rows: (string | number)[][] = [["workload", "MB/run", "bare MB/s", "hatch MB/s", "hatch/bare"]];
  for (const workload of workloads) {
    const rates = { bare: [] as number[], hatch: [] as number[] };
    let bytes = 0;
    for (let round = 0; round < THROUGHPUT_ROUNDS; round++) {
      for (const [name, shell] of [["bare", bare], ["hatch", hatch]] as const) {
        const run = await timeCommand(shell, workload.command);
        rates[name].push(run.bytes / 1e3 / run.ms);
        bytes = run.bytes;
      }
    }
    const [bareRate, hatchRate] = [quantile(rates.bare, 0.5), quantile(rates.hatch, 0.5)];
    rows.push([workload.name, mb(bytes), bareRate.toFixed(1), hatchRate.toFixed(1), `${((hatchRate / bareRate) * 100).toFixed(0)}%`]);
  }
  console.log("tp done"); console.log(`\n1. Output throughput, median of ${THROUGHPUT_ROUNDS} rounds (target: hatch >= 75% of bare)`);
  table(rows);
}

async function echoSection(world: World, owner: Person): Promise<void> {
  const paths: [string, () => Promise<Shell & AsyncDisposable>][] = [
    ["bare PTY, bunTerminalBackend", () => bareShell(bunTerminalBackend)],
    ["bare PTY, bunPtyBackend (bun-pty)", () => bareShell(bunPtyBackend)],
    ["hatch over WebSocket", async () => (await newSession(owner, "echo"), HatchTerminal.open(world, owner, "echo"))],
  ];
  const rows: (string | number)[][] = [["path", "p50 ms", "p99 ms", "max ms"]];
  for (const [name, open] of paths) {
    console.log("opening", name); await using shell = await open(); console.log("opened");
    const samples = await echoRoundTrips(shell);
    rows.push([name, ms(quantile(samples, 0.5)), ms(quantile(samples, 0.99)), ms(Math.max(...samples))]);
  }
  console.log(`\n2. Keystroke echo round trip, ${ECHO_KEYS} keys (target: hatch p50 < 0.5 ms, p99 < 1.5 ms)`);
  table(rows);
}

/** Reconnect `SNAPSHOT_REPEATS` times (after one untimed): ms to the snapshot, and the last snapshot's size. */
async function reconnects(world: World, owner: Person, id: string) {
  const times: number[] = [];
  let last = { frameBytes: 0, lines: 0 };
  for (let i = 0; i <= SNAPSHOT_REPEATS; i++) {
    const started = performance.now();
    await using terminal = await HatchTerminal.open(world, owner, id);
    if (i > 0) times.push(terminal.snapshot.at - started);
    last = terminal.snapshot;
  }
  return { times, ...last };
}

async function snapshotSection(world: World, owner: Person, project: { id: string }): Promise<void> {
  await newSession(owner, "empty");
  await newSession(owner, "full");
  {
    await using filling = await HatchTerminal.open(world, owner, "full");
    await timeCommand(filling, `seq 1 ${SNAPSHOT_FILL_LINES}`);
    // Time the reconnect, not the parsing of the fill that is still queued.
    await world.hatch.terminal.sessions.find({ userId: owner.user.id, projectId: project.id, agentId: null, id: "full" })!.mirror.settled();
  }
  const rows: (string | number)[][] = [["session", "median ms", "p95 ms", "max ms", "frame bytes", "lines"]];
  for (const [name, id] of [["empty (baseline)", "empty"], [`after seq 1 ${SNAPSHOT_FILL_LINES}`, "full"]] as const) {
    const { times, frameBytes, lines } = await reconnects(world, owner, id);
    rows.push([name, ms(quantile(times, 0.5)), ms(quantile(times, 0.95)), ms(Math.max(...times)), frameBytes, lines]);
  }
  const scrollback = world.platform.settings.get("terminalScrollbackLines");
  console.log(`\n3. Reconnect until snapshot, ${SNAPSHOT_REPEATS} reconnects, scrollback ${scrollback} lines (target: < 100 ms)`);
  table(rows);
}

interface MemoryFigures {
  before: { rss: number; heapUsed: number };
  after: { rss: number; heapUsed: number };
}

function memoryNow(): { rss: number; heapUsed: number } {
  Bun.gc(true);
  const { rss, heapUsed } = process.memoryUsage();
  return { rss, heapUsed };
}

/** The child's work: a fresh world, then IDLE_SESSIONS sessions each left at its first prompt. */
async function idleSessionMemory(): Promise<MemoryFigures> {
  await using world = await World.start();
  const project = await world.project("bench");
  const owner = await world.signedIn(project, "owner");
  world.platform.settings.set("terminalMaxSessions", MAX_SESSIONS);
  const idle = async (id: string) => {
    await newSession(owner, id);
    const session = world.hatch.terminal.sessions.find({ userId: owner.user.id, projectId: project.id, agentId: null, id })!;
    await waitFor(() => session.mirror.offset > 0, `the prompt of session "${id}"`, WAIT_MS);
    await session.mirror.settled();
  };
  // One session first: one-off costs (JIT, the first headless terminal) are not per session.
  await idle("warmup");
  await owner.client.delete(`/api/packages/agent/terminal/sessions/warmup`);
  const before = memoryNow();
  for (let i = 0; i < IDLE_SESSIONS; i++) await idle(`idle-${i}`);
  return { before, after: memoryNow() };
}

async function memorySection(): Promise<void> {
  const child = Bun.spawn([process.execPath, import.meta.path, MEMORY_CHILD], { stdout: "pipe", stderr: "inherit" });
  const [text, code] = await Promise.all([new Response(child.stdout).text(), child.exited]);
  if (code !== 0) throw new Error(`The memory child process exited with ${code}`);
  const { before, after } = JSON.parse(text.trim().split("\n").at(-1)!) as MemoryFigures;
  const perSession = (key: "rss" | "heapUsed") => (after[key] - before[key]) / IDLE_SESSIONS;
  console.log(`\n4. Server memory, ${IDLE_SESSIONS} idle Container Root sessions, after a full GC (target: < 2 MB/session RSS)`);
  table([
    ["", "RSS MB", "heapUsed MB"],
    ["idle server, no sessions (baseline)", mb(before.rss), mb(before.heapUsed)],
    [`with ${IDLE_SESSIONS} idle sessions`, mb(after.rss), mb(after.heapUsed)],
    ["per session", mb(perSession("rss")), mb(perSession("heapUsed"))],
  ]);
}

async function main(): Promise<void> {
  const cpu = cpus()[0]?.model ?? "unknown cpu";
  console.log(`machine: ${navigator.hardwareConcurrency} cores (${cpu}), ${process.platform}/${process.arch}; Bun ${Bun.version}`);
  {
    await using world = await World.start();
    const project = await world.project("bench");
    const owner = await world.signedIn(project, "owner");
    await throughputSection(world, owner);
    await echoSection(world, owner);
    await snapshotSection(world, owner, project);
  }
  await memorySection();
}

if (process.argv[2] === MEMORY_CHILD) console.log(JSON.stringify(await idleSessionMemory()));
else await main();
