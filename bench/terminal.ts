/**
 * Terminal performance, each figure beside a baseline measured in the same run:
 *
 * 1. Output throughput (MB/s): a command printing a fixed amount, typed into a
 *    hatch session over a real WebSocket (the client acks every ACK_EVERY_BYTES,
 *    as the widget does) and timed from sending the command until the marker it
 *    prints last arrives; baseline: the same command typed into bash on a bare
 *    PTY (`bunTerminalBackend`, no server). Target: hatch >= 75% of bare.
 *    Two more columns locate a shortfall: the same command in a session with
 *    no view attached (PTY and mirror, no socket), and the same bytes written
 *    straight into a ScreenMirror (parsing alone, no PTY).
 * 2. Keystroke echo round trip: one key typed at a bash prompt until its echo
 *    arrives, 500 times; hatch over the WebSocket, bare `bunTerminalBackend` and
 *    bare `bunPtyBackend` (bun-pty, to show why it is not the default).
 *    Target: hatch p50 < 0.5 ms, p99 < 1.5 ms.
 * 3. Reconnect snapshot: opening a WebSocket until the `snapshot` message, for
 *    sessions whose 10,000-line scrollback is full (plain numbers; coloured
 *    wide lines); baseline: an empty session. The first reconnect is printed
 *    apart: later ones reuse the mirror's cache of serialized scrollback.
 *    Target: < 100 ms.
 * 4. Server memory per idle session: RSS and JS heap (after a full GC) before
 *    and after creating 100 idle Container Root sessions, divided by 100. The
 *    shells are separate processes and are not counted: this is hatch's own cost.
 *    It runs in a fresh child process, so the heap freed by sections 1-3 cannot
 *    absorb the new sessions. Target: < 2 MB per session.
 *
 * The WebSocket client runs in this process, on the server's event loop, so
 * hatch's figures include the client's work, which a browser does elsewhere.
 * (Moving the client to a Worker thread did not change the throughput when
 * this was written.) Loopback only, bounded loops; nothing is asserted.
 *
 * Run: ./node_modules/.bin/bun bench/terminal.ts
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { ACK_EVERY_BYTES, bunPtyBackend, bunTerminalBackend, type PtyBackend } from "../src/pty/index.ts";
import { ParserThread, ScreenMirror } from "../src/screen/index.ts";
import { createSession, TERMINAL } from "../test/helpers/terminal.ts";
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
/** Output past the echo that shows a command has started (its Enter passed screening). */
const OUTPUT_BEGUN_BYTES = 4096;
/** Time a bare shell gets to exit after `exit` before SIGKILL. */
const EXIT_GRACE_MS = 2000;
/** Chunk size the mirror-only figure is fed in: the size of a large PTY read. */
const PTY_READ_BYTES = 64 * 1024;
/** Unparsed mirror bytes at which PtySession pauses the PTY, and resumes (its MIRROR_BACKLOG_*_BYTES); the mirror-only figure waits likewise. */
const MIRROR_BACKLOG_BYTES = 4 * 1024 * 1024;
const MIRROR_RESUME_BYTES = 1024 * 1024;
/** The bare shells' prompt. */
const BARE_PROMPT = "$ ";
/**
 * Printed after each timed command, numbered so that a screen holding an earlier run's marker does not end this
 * one; the shell computes it, so the echoed command line never matches.
 */
const endCommand = (run: number) => `echo END-$((6*7))-${run}`;
const endMarker = (run: number) => `END-42-${run}`;
/** The timed key, and a key whose echo marks that a Ctrl+U redraw has fully arrived (no prompt ends in it). */
const KEY = "a";
const SYNC_KEY = "z";
const CTRL_U = "\x15";
/** argv[2] that makes this script the memory section's child process. */
const MEMORY_CHILD = "--idle-session-memory";

const latin1 = new TextDecoder("latin1");
/** The mirror-only figure's parser thread (the server has its own). */
const parser = new ParserThread();

/**
 * Counts output bytes and wakes one waiter on the chunk that satisfies it,
 * with the chunk's arrival time (taken before any promise machinery runs).
 * A snapshot (a hatch view cut over to the screen instead of the bytes) is
 * shown to the waiter whole, as the widget would draw it.
 */
class OutputWatch {
  bytes = 0;
  /** Snapshots received, the one at attach included. */
  snapshots = 0;
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

  /** A snapshot replaced the screen: what came before it is gone, and the screen it shows may satisfy the waiter. */
  screen(text: string): void {
    const at = performance.now();
    this.snapshots++;
    this.#tail = "";
    const waiter = this.#waiter;
    if (waiter?.test(text)) {
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
      // `exit`, not SIGHUP: bash at times stays in poll() after a SIGHUP that lands while it handles typed keys.
      pty.write(`${CTRL_U}exit\r`);
      if (!(await Promise.race([pty.exited.then(() => true), Bun.sleep(EXIT_GRACE_MS).then(() => false)]))) {
        pty.kill("SIGKILL");
        await pty.exited;
      }
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
      this.output.screen(message.data);
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

/** The world the sections run in: one project and its signed-in owner. */
interface Bench {
  world: World;
  owner: Person;
  projectId: string;
}

/** The live session `id` of the owner, reached in-process to read its mirror. */
function liveSession({ world, owner, projectId }: Bench, id: string) {
  const session = world.hatch.terminal.sessions.find({ userId: owner.user.id, projectId, agentId: null, id });
  if (!session) throw new Error(`Cannot find session "${id}"`);
  return session;
}

/** Clear the line; the sync key's echo comes after every byte of Ctrl+U's redraw. */
async function clearLine(shell: Shell): Promise<void> {
  const synced = shell.output.next((recent) => recent.endsWith(SYNC_KEY));
  shell.type(CTRL_U + SYNC_KEY);
  await synced;
}

/** Timed commands so far: numbers each one's end marker. */
let timedRuns = 0;

/**
 * Type `command` followed by the end marker: bytes received, ms until the
 * marker arrived (as bytes, or on a snapshot's screen), this process's CPU
 * time meanwhile (server and client), and the snapshots received meanwhile.
 */
async function timeCommand(shell: Shell, command: string): Promise<{ bytes: number; ms: number; cpuMs: number; snapshots: number }> {
  await clearLine(shell);
  shell.type(CTRL_U);
  const run = ++timedRuns;
  const before = { bytes: shell.output.bytes, snapshots: shell.output.snapshots };
  const done = shell.output.next((recent) => recent.includes(endMarker(run)));
  const cpu = process.cpuUsage();
  const sent = performance.now();
  shell.type(`${command}; ${endCommand(run)}\r`);
  const at = await done;
  const { user, system } = process.cpuUsage(cpu);
  return { bytes: shell.output.bytes - before.bytes, ms: at - sent, cpuMs: (user + system) / 1000, snapshots: shell.output.snapshots - before.snapshots };
}

/** MB/s at which a ScreenMirror alone parses `data`, fed as PtySession feeds it: no PTY, no socket. */
async function mirrorParseRate(data: Uint8Array, scrollback: number): Promise<number> {
  using mirror = new ScreenMirror({ cols: 80, rows: 24, scrollback, parser });
  const started = performance.now();
  for (let at = 0; at < data.length; at += PTY_READ_BYTES) {
    mirror.write(data.subarray(at, at + PTY_READ_BYTES));
    if (mirror.backlog > MIRROR_BACKLOG_BYTES) await mirror.drained(MIRROR_RESUME_BYTES);
  }
  await mirror.settled();
  return data.length / 1e3 / (performance.now() - started);
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

/** A throughput workload: the command, and the bytes the PTY delivers for it (the tty turns each LF into CRLF). */
interface Workload {
  name: string;
  command: string;
  output(): Uint8Array;
}

const WORKLOADS: Workload[] = [
  {
    name: `long lines: head -c ${THROUGHPUT_BYTES} /dev/zero | tr`,
    command: `head -c ${THROUGHPUT_BYTES} /dev/zero | tr '\\0' y`,
    output: () => new Uint8Array(THROUGHPUT_BYTES).fill("y".charCodeAt(0)),
  },
  {
    name: `short lines: seq 1 ${THROUGHPUT_LINES}`,
    command: `seq 1 ${THROUGHPUT_LINES}`,
    output: () => new TextEncoder().encode(Array.from({ length: THROUGHPUT_LINES }, (_, i) => `${i + 1}\r\n`).join("")),
  },
];

/**
 * The same command in a session with no view attached: PTY and mirror only,
 * no socket and no lease flow control. MB/s from typing it until the mirror
 * has parsed `outputBytes` more. The view closes once the output has begun:
 * input screening holds the Enter until the screen shows the line, and a view
 * that closes drops what it had queued (so nothing it typed runs after it left).
 */
async function detachedRate(bench: Bench, id: string, command: string, outputBytes: number): Promise<number> {
  const { mirror } = liveSession(bench, id);
  let start = 0;
  let sent = 0;
  {
    await using terminal = await HatchTerminal.open(bench.world, bench.owner, id);
    await clearLine(terminal);
    terminal.type(CTRL_U);
    start = mirror.offset;
    sent = performance.now();
    terminal.type(`${command}\r`);
    await waitFor(() => mirror.offset - start >= command.length + OUTPUT_BEGUN_BYTES, "the command's output to begin", WAIT_MS);
  }
  await waitFor(() => mirror.offset - start >= outputBytes, `${outputBytes} bytes in the mirror`, WAIT_MS);
  await mirror.settled();
  return outputBytes / 1e3 / (performance.now() - sent);
}

/** One throughput workload, `THROUGHPUT_ROUNDS` times each way; the table row of medians. */
async function throughputRow(bench: Bench, workload: Workload, bare: Shell, hatch: Shell): Promise<string[]> {
  const output = workload.output();
  const scrollback = bench.world.platform.settings.get("terminalScrollbackLines", bench.projectId);
  const runs = { bare: [] as { rate: number; cpu: number }[], hatch: [] as { rate: number; cpu: number }[] };
  const detached: number[] = [];
  const alone: number[] = [];
  let cutOver = 0;
  for (let round = 0; round < THROUGHPUT_ROUNDS; round++) {
    for (const [name, shell] of [["bare", bare], ["hatch", hatch]] as const) {
      const run = await timeCommand(shell, workload.command);
      // The program's output, not the bytes received: a view cut over to a snapshot skips some.
      runs[name].push({ rate: output.length / 1e3 / run.ms, cpu: run.cpuMs / run.ms });
      if (run.snapshots > 0) cutOver++;
    }
    detached.push(await detachedRate(bench, "throughput-detached", workload.command, output.length));
    alone.push(await mirrorParseRate(output, scrollback));
  }
  const median = (list: { rate: number; cpu: number }[]) => [...list].sort((a, b) => a.rate - b.rate)[Math.floor(list.length / 2)]!;
  const [b, h] = [median(runs.bare), median(runs.hatch)];
  const percent = (x: number) => `${(x * 100).toFixed(0)}%`;
  const rate = (x: number) => x.toFixed(1);
  return [workload.name, mb(output.length), rate(b.rate), rate(h.rate), percent(h.rate / b.rate), percent(b.cpu), percent(h.cpu), `${cutOver}/${THROUGHPUT_ROUNDS}`, rate(quantile(detached, 0.5)), rate(quantile(alone, 0.5))];
}

async function throughputSection(bench: Bench): Promise<void> {
  await newSession(bench.owner, "throughput");
  await newSession(bench.owner, "throughput-detached");
  await using bare = await bareShell(bunTerminalBackend);
  await using hatch = await HatchTerminal.open(bench.world, bench.owner, "throughput");
  const rows: string[][] = [["workload", "MB/run", "bare MB/s", "hatch MB/s", "hatch/bare", "CPU bare", "CPU hatch", "cut over", "no view MB/s", "mirror alone MB/s"]];
  for (const workload of WORKLOADS) rows.push(await throughputRow(bench, workload, bare, hatch));
  console.log(`\n1. Output throughput, median of ${THROUGHPUT_ROUNDS} rounds (target: hatch >= 75% of bare)`);
  table(rows);
  console.log("   CPU: this process's CPU time over wall time (100% = one core). No view: a hatch session with no WebSocket attached,");
  console.log("   timed until its mirror has parsed the output. Mirror alone: the same bytes written to a ScreenMirror, no PTY, no socket.");
  console.log("   Cut over: hatch runs in which the lease holder was sent a snapshot instead of part of the output: output already read");
  console.log("   when the PTY was paused backed the socket up past the holder's allowance (this client shares the server's event loop,");
  console.log("   so it cannot read while the server reads), and the view was cut over.");
}

async function echoSection({ world, owner }: Bench): Promise<void> {
  const paths: [string, () => Promise<Shell & AsyncDisposable>][] = [
    ["bare PTY, bunTerminalBackend", () => bareShell(bunTerminalBackend)],
    ["bare PTY, bunPtyBackend (bun-pty)", () => bareShell(bunPtyBackend)],
    ["hatch over WebSocket", async () => (await newSession(owner, "echo"), HatchTerminal.open(world, owner, "echo"))],
  ];
  const rows: (string | number)[][] = [["path", "p50 ms", "p99 ms", "max ms"]];
  for (const [name, open] of paths) {
    await using shell = await open();
    const samples = await echoRoundTrips(shell);
    rows.push([name, ms(quantile(samples, 0.5)), ms(quantile(samples, 0.99)), ms(Math.max(...samples))]);
  }
  console.log(`\n2. Keystroke echo round trip, ${ECHO_KEYS} keys (target: hatch p50 < 0.5 ms, p99 < 1.5 ms)`);
  table(rows);
}

/**
 * Reconnect once cold (the mirror has cached no serialized scrollback yet),
 * then SNAPSHOT_REPEATS times: ms to each snapshot, and the snapshot's size.
 */
async function reconnects(world: World, owner: Person, id: string) {
  const times: number[] = [];
  let last = { frameBytes: 0, lines: 0 };
  for (let i = 0; i <= SNAPSHOT_REPEATS; i++) {
    const started = performance.now();
    await using terminal = await HatchTerminal.open(world, owner, id);
    times.push(terminal.snapshot.at - started);
    last = terminal.snapshot;
  }
  return { first: times[0]!, warm: times.slice(1), ...last };
}

/** Sessions for the snapshot section: an empty one (the baseline) and two filled past the scrollback. */
const SNAPSHOT_SESSIONS = [
  { id: "empty", name: "empty (baseline)", fill: null },
  { id: "numbers", name: `seq 1 ${SNAPSHOT_FILL_LINES}`, fill: `seq 1 ${SNAPSHOT_FILL_LINES}` },
  {
    id: "styled",
    name: `${SNAPSHOT_FILL_LINES} coloured 77-column lines`,
    // GNU sed turns \x1b into ESC: two colours and bold per line, as test runners print.
    fill: `seq -w 1 ${SNAPSHOT_FILL_LINES} | sed 's/.*/\\x1b[1;32mPASS\\x1b[0m test &: \\x1b[36m${"-".repeat(50)}\\x1b[0m ok (3 ms)/'`,
  },
] as const;

async function snapshotSection(bench: Bench): Promise<void> {
  const { world, owner } = bench;
  for (const { id, fill } of SNAPSHOT_SESSIONS) {
    await newSession(owner, id);
    if (fill === null) continue;
    await using filling = await HatchTerminal.open(world, owner, id);
    await timeCommand(filling, fill);
    // Time the reconnect, not the parsing of the fill that is still queued.
    await liveSession(bench, id).mirror.settled();
  }
  const rows: (string | number)[][] = [["session", "first ms", "median ms", "p95 ms", "max ms", "frame bytes", "lines"]];
  for (const { id, name } of SNAPSHOT_SESSIONS) {
    const { first, warm, frameBytes, lines } = await reconnects(world, owner, id);
    rows.push([name, ms(first), ms(quantile(warm, 0.5)), ms(quantile(warm, 0.95)), ms(Math.max(...warm)), frameBytes, lines]);
  }
  const scrollback = world.platform.settings.get("terminalScrollbackLines", bench.projectId);
  console.log(`\n3. Reconnect until snapshot: first (cold), then ${SNAPSHOT_REPEATS} more; scrollback ${scrollback} lines (target: < 100 ms)`);
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
  world.platform.settings.set("terminalMaxSessions", MAX_SESSIONS, null);
  const bench = { world, owner, projectId: project.id };
  const idle = async (id: string) => {
    await newSession(owner, id);
    const session = liveSession(bench, id);
    await waitFor(() => session.mirror.offset > 0, `the prompt of session "${id}"`, WAIT_MS);
    await session.mirror.settled();
  };
  // One session first: one-off costs (JIT, the first headless terminal) are not per session.
  await idle("warmup");
  await owner.client.delete(`${TERMINAL}/sessions/warmup`);
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
    const bench = { world, owner: await world.signedIn(project, "owner"), projectId: project.id };
    await throughputSection(bench);
    await echoSection(bench);
    await snapshotSection(bench);
  }
  await memorySection();
}

if (process.argv[2] === MEMORY_CHILD) console.log(JSON.stringify(await idleSessionMemory()));
else await main();
