import { setTimeout as delay } from "node:timers/promises";
import { ScreenMirror, type ParserThread } from "../screen/index.ts";
import { randomToken, tooMany } from "../platform/index.ts";
import { Blocklist, type LineVerdict } from "./blocklist.ts";
import type { ViewSink } from "./control-message.ts";
import { foregroundDirectory, shellInForeground } from "./foreground-program.ts";
import { InputGuard } from "./input-guard.ts";
import type { PtyProcess } from "./pty-process.ts";
import type { LaunchSpec, SpawnedPty } from "./launch-spec.ts";
import { killMarkedProcesses, scratchMarks } from "./marked-processes.ts";
import type { ScratchDir } from "./scratch-dir.ts";
import type { SessionKey } from "./session-key.ts";
import { SessionViews, type View, type ViewOptions } from "./session-views.ts";
import { TokenBucket } from "./token-bucket.ts";

/** A resize over HTTP: its user's, judged against the input lease when it is applied. */
export interface ResizeCaller {
  userId: string;
}

/** Execs one session runs at once; one more is refused with 429 `too_many_execs`. */
export const MAX_EXECS_PER_SESSION = 8;

/** What a session was created with; shown by list and create. */
export interface SessionInfo {
  id: string;
  userId: string;
  projectId: string;
  agentId: string | null;
  sourceSlug: string;
  cwd: string;
  cols: number;
  rows: number;
  /** Scrollback lines the session keeps (Terminal: Scrollback Lines at create); the client sizes its buffer by it. */
  scrollback: number;
  readOnly: boolean;
  fullScreen: boolean;
  createdAt: number;
  lastActivityAt: number;
  views: number;
  /** Confinement in force: `none` for an unsandboxed spawn. */
  confinement: string;
}

/** Everything a session is built from; the manager spawns and passes it in. */
export interface PtySessionOptions {
  key: SessionKey;
  sourceSlug: string;
  cwd: string;
  readOnly: boolean;
  authority: string;
  cols: number;
  rows: number;
  scrollback: number;
  /** The thread that parses the screen mirrors' output. */
  parser: ParserThread;
  scratch: ScratchDir;
  /** How the program was launched: exec reuses it to run commands in the same sandbox. */
  launch: LaunchSpec;
  /** Spawns the program, wiring its output to `onData`. */
  spawn(onData: (chunk: Uint8Array) => void): SpawnedPty;
  /** Paths the input screen protects (the data dir). */
  protectedPaths: string[];
  /** Input token bucket per connection. */
  inputBucket: { capacity: number; refillPerSecond: number };
  now(): number;
  /** A line was blocked by the input screen. */
  onBlocked(view: View, reason: string): void;
  /** The program exited (or was killed); the manager forgets the session. */
  onExit(session: PtySession, code: number): void;
}

/** A WebSocket close code for "the session ended" (4000-4999 are the application's). */
export const CLOSE_SESSION_ENDED = 4000;
/** The notice a view gets when input it sent was dropped for arriving faster than it may. */
export const INPUT_TOO_FAST = "Input is arriving too fast; some was dropped";
/** The notice a view gets when input it sent was dropped because the program has not read what it was sent before. */
export const INPUT_NOT_READ = "The program is not reading its input; what you typed was dropped until it reads what waits";

/**
 * One managed PTY: the process, its screen mirror, its scratch dir and its
 * views. Output goes to the mirror and the views on the event loop that read
 * it, with nothing batched, so a keystroke's echo is not delayed.
 */
export class PtySession {
  readonly key: SessionKey;
  readonly mirror: ScreenMirror;
  readonly views: SessionViews;
  readonly createdAt: number;
  /** This run of the session id: reconnect offsets count in it (see ViewHost.instance). */
  readonly instance = randomToken(9);
  lastActivityAt: number;
  #process: PtyProcess;
  #lastOutputAt = 0;
  /** Why the PTY is paused: the lease holder lags, or the mirror's parser does. */
  readonly #pauses = new Set<"lease" | "mirror">();
  readonly #confinement: string;
  #destroyed = false;
  /** The end under way, once `destroy` was called. */
  #ending: Promise<void> | null = null;
  #exitCode: number | null = null;
  /** Aborted when the session is destroyed, so work running for it (an exec) stops with it. */
  readonly #closing = new AbortController();
  #execsRunning = 0;
  readonly #guards = new WeakMap<View, { guard: InputGuard; bucket: TokenBucket; toldNotRead: boolean }>();
  /**
   * The view whose keys reached the shell last: null until one types,
   * `GONE_TYPIST` once that view detached (its line may still be on the prompt,
   * but the view itself, and the socket it holds, are let go).
   */
  #lastTypist: View | typeof GONE_TYPIST | null = null;
  /** Set while a resize was applied less than RESIZE_INTERVAL_MS ago. */
  #resizeInterval: ReturnType<typeof setTimeout> | null = null;
  /** The latest resize asked for during that interval, applied when it ends. */
  #pendingResize: { by: View | ResizeCaller; cols: number; rows: number } | null = null;
  /** Whether the views were last told of a coming idle reap (see `countdown`). */
  #countingDown = false;

  constructor(private readonly options: PtySessionOptions) {
    this.key = options.key;
    this.createdAt = options.now();
    this.lastActivityAt = this.createdAt;
    this.mirror = new ScreenMirror({ cols: options.cols, rows: options.rows, scrollback: options.scrollback, parser: options.parser });
    this.views = new SessionViews(options.key.id, {
      mirror: this.mirror,
      instance: this.instance,
      pauseOutput: () => this.#pause("lease"),
      resumeOutput: () => this.#resume("lease"),
    });
    let wasFullScreen = false;
    const spawned = this.#spawn((chunk) => {
      this.#lastOutputAt = performance.now();
      this.mirror.write(chunk);
      this.views.broadcast(chunk);
      if (this.mirror.backlog > MIRROR_BACKLOG_PAUSE_BYTES && !this.#pauses.has("mirror") && this.#pause("mirror")) {
        void this.mirror.drained(MIRROR_BACKLOG_RESUME_BYTES).then(() => this.#resume("mirror"));
      }
      if (this.mirror.fullScreen !== wasFullScreen) {
        wasFullScreen = this.mirror.fullScreen;
        this.views.announce({ type: "fullScreen", active: wasFullScreen });
      }
    });
    this.#process = spawned.process;
    this.#confinement = spawned.confinement;
    void this.#process.exited.then((code) => {
      this.#exitCode = code;
      void this.destroy(`The program exited with code ${code}`);
      options.onExit(this, code);
    });
  }

  get id() {
    return this.key.id;
  }
  get cwd() {
    return this.options.cwd;
  }
  get sourceSlug() {
    return this.options.sourceSlug;
  }
  get scratchPath() {
    return this.options.scratch.path;
  }
  get destroyed() {
    return this.#destroyed;
  }
  /** Execs running now: a session running one is in use, not idle. */
  get execsRunning(): number {
    return this.#execsRunning;
  }

  /**
   * The input screen's verdict on an exec's command, judged as the lines
   * typed at the shell in the exec's working directory (the session's
   * start) would be: a command refused when typed must not run when posted.
   * Checked whole, so its line breaks separate commands as the shell's do,
   * and a quoted string or here-document spanning lines stays text. Best
   * effort, like the screen itself.
   */
  screenExec(command: string): LineVerdict {
    return new Blocklist(this.#screenOptions(() => this.options.launch.cwd)).checkLine(command);
  }

  /** What the screen needs to know of this session, with where relative paths start from. */
  #screenOptions(cwd: () => string | null) {
    return {
      protectedPaths: this.options.protectedPaths,
      // Pasted image paths point into scratch, which lives inside the protected data dir.
      allowedPaths: [this.options.scratch.path],
      // So `~/…` and `$HOME/…` name what they name to the shell: a data dir under the home is still protected.
      home: this.options.launch.env.HOME,
      cwd,
    };
  }

  /**
   * Run an exec as this session's work: it counts as activity from start to
   * end, and the signal it is given aborts when the session is destroyed. At
   * most MAX_EXECS_PER_SESSION run at once.
   */
  async runExec<T>(work: (closing: AbortSignal) => Promise<T>): Promise<T> {
    // Each exec is a process tree until its timeout: a caller looping on exec must not fork without bound.
    if (this.#execsRunning >= MAX_EXECS_PER_SESSION) {
      throw tooMany("too_many_execs", `The session already runs ${MAX_EXECS_PER_SESSION} commands: try again when one has finished`);
    }
    this.#execsRunning++;
    this.lastActivityAt = this.options.now();
    try {
      return await work(this.#closing.signal);
    } finally {
      this.#execsRunning--;
      this.lastActivityAt = this.options.now();
    }
  }
  get pid() {
    return this.#process.pid;
  }
  get launch() {
    return this.options.launch;
  }
  get authority() {
    return this.options.authority;
  }

  /** The session as list and create show it. */
  info(): SessionInfo {
    return {
      id: this.key.id,
      userId: this.key.userId,
      projectId: this.key.projectId,
      agentId: this.key.agentId,
      sourceSlug: this.options.sourceSlug,
      cwd: this.options.cwd,
      cols: this.mirror.cols,
      rows: this.mirror.rows,
      scrollback: this.mirror.scrollback,
      readOnly: this.options.readOnly,
      fullScreen: this.mirror.fullScreen,
      createdAt: this.createdAt,
      lastActivityAt: this.lastActivityAt,
      views: this.views.size,
      confinement: this.#confinement,
    };
  }

  /** Attach a view (WebSocket). Attaching counts as activity. */
  attach(sink: ViewSink, options: ViewOptions): View {
    this.lastActivityAt = this.options.now();
    const view = this.views.attach(sink, options);
    const guard = new InputGuard({
      currentLine: () => this.mirror.currentLine(),
      settled: () => this.#echoSettled(),
      // Checked again as bytes leave, not only as they arrive: input queued behind a line that waited for
      // the screen must not reach the PTY once its view lost the lease.
      forward: (bytes) => {
        if (this.views.mayDrive(view) && !this.#destroyed) this.#process.write(bytes);
      },
      onBlocked: (reason) => {
        this.views.control(view, { type: "blocked", reason });
        this.options.onBlocked(view, reason);
      },
      // So `rm -rf usr` typed in `/` is `rm -rf /usr`. Read at each checked line: the shell may have moved.
      ...this.#screenOptions(() => foregroundDirectory(this.#process.pid)),
      // In a full-screen app the cursor line is the editor's, not a shell command. The output alone cannot say
      // so (`printf '\e[?1049h'` at the prompt): only a program the kernel says is not a shell is trusted to be one.
      fullScreen: () => this.mirror.fullScreen && shellInForeground(this.#process.pid, this.options.launch.argv[0] ?? "") === false,
    });
    this.#guards.set(view, { guard, bucket: new TokenBucket(this.options.inputBucket), toldNotRead: false });
    return view;
  }

  /** Detach a view. Detaching counts as activity, so the idle clock restarts. */
  detach(view: View): void {
    this.lastActivityAt = this.options.now();
    this.#guards.get(view)?.guard.close();
    if (this.#lastTypist === view) this.#lastTypist = GONE_TYPIST;
    this.views.detach(view);
  }

  /**
   * Keystrokes from a view: dropped unless the view holds the lease and may
   * write; capped by the view's token bucket; screened line by line.
   */
  input(view: View, data: string): void {
    if (!this.views.mayDrive(view) || this.#destroyed) return;
    const state = this.#guards.get(view)!;
    const bytes = byteLength(data);
    // More than the bucket's burst can never pass it: said as such, not as a rate the client could slow down to.
    if (bytes > state.bucket.capacity) {
      this.views.control(view, { type: "notice", message: `Input of ${bytes} bytes in one message was dropped: send at most ${state.bucket.capacity} bytes per message` });
      return;
    }
    // A program busy elsewhere (a build, a sleep) reads nothing: what it has not taken waits in the server's memory.
    if (this.#process.unwritten >= MAX_UNWRITTEN_INPUT) {
      if (!state.toldNotRead) this.views.control(view, { type: "notice", message: INPUT_NOT_READ });
      state.toldNotRead = true;
      return;
    }
    state.toldNotRead = false;
    // The queue behind a line waiting for the screen is bounded too, not only the byte rate.
    if (state.guard.backlog >= MAX_QUEUED_INPUTS || !state.bucket.take(bytes)) {
      this.views.control(view, { type: "notice", message: INPUT_TOO_FAST });
      return;
    }
    // The shell's line is the session's, not the view's: after another view typed, check it on the screen.
    if (this.#lastTypist !== view) {
      if (this.#lastTypist !== null) state.guard.lineMayDiffer();
      this.#lastTypist = view;
    }
    this.lastActivityAt = this.options.now();
    state.guard.push(data).catch((error) => console.error("hatch: input could not reach the session", error));
  }

  /**
   * Resize from a view (the lease holder only) or from a user over HTTP (while
   * no other user's view holds the lease). Each size change costs the program
   * a redraw and the parser thread every session shares a resize and new
   * snapshots, so a session changes size at most once per RESIZE_INTERVAL_MS:
   * a resize within that time of the last is held, and only the latest one
   * held is applied when it is up (a window being dragged ends at the size it
   * was let go at), if whoever asked may still resize then.
   */
  resize(by: View | ResizeCaller, cols: number, rows: number): boolean {
    if (!this.#mayResize(by)) return false;
    if (this.#resizeInterval) {
      this.#pendingResize = { by, cols, rows };
      return true;
    }
    this.#applySize(cols, rows);
    return true;
  }

  #mayResize(by: View | ResizeCaller): boolean {
    if (this.#destroyed) return false;
    if ("id" in by) return this.views.mayDrive(by);
    const holder = this.views.leaseHolder;
    return !holder || holder.userId === by.userId;
  }

  #applySize(cols: number, rows: number): void {
    // The size it has: nothing to tell the program or the views, and no snapshot to take again.
    if (cols === this.mirror.cols && rows === this.mirror.rows) return;
    this.#process.resize(cols, rows);
    this.mirror.resize(cols, rows);
    this.views.announce({ type: "resize", cols, rows });
    this.#resizeInterval = setTimeout(() => this.#endResizeInterval(), RESIZE_INTERVAL_MS);
    this.#resizeInterval.unref?.();
  }

  #endResizeInterval(): void {
    this.#resizeInterval = null;
    const pending = this.#pendingResize;
    this.#pendingResize = null;
    // Held, not yet done: one who lost the lease to another (or a session that ended) meanwhile no longer sizes it.
    if (!pending || !this.#mayResize(pending.by)) return;
    this.#applySize(pending.cols, pending.rows);
  }

  /**
   * Tell every view how many seconds are left before an idle reap, or (null)
   * that none is coming any more: a withdrawal goes out only after a countdown.
   */
  countdown(secondsLeft: number | null): void {
    if (secondsLeft === null && !this.#countingDown) return;
    this.#countingDown = secondsLeft !== null;
    this.views.announce({ type: "countdown", secondsLeft });
  }

  /**
   * Resolves once the echo of keys already forwarded has arrived and the output
   * has gone quiet, so the screen line shows what the shell will run. The input
   * guard bounds the wait; it is only used for lines edited with recall or
   * completion keys, never on plain typing.
   */
  async #echoSettled(): Promise<void> {
    const start = this.mirror.offset;
    const began = performance.now();
    while (performance.now() - began < ECHO_SETTLE_LIMIT_MS) {
      if (this.mirror.offset > start && performance.now() - this.#lastOutputAt >= ECHO_QUIET_MS) break;
      await delay(ECHO_POLL_MS);
    }
    // No wait for the parser here: the guard's currentLine() is answered only once this output is parsed.
  }

  /** Pause the PTY for a reason; true when it is (now or already) paused for it. */
  #pause(reason: "lease" | "mirror"): boolean {
    if (this.#pauses.has(reason)) return true;
    if (this.#pauses.size === 0 && !this.#process.pause()) return false;
    this.#pauses.add(reason);
    return true;
  }

  #resume(reason: "lease" | "mirror"): void {
    if (!this.#pauses.delete(reason) || this.#pauses.size > 0) return;
    this.#process.resume();
  }

  /** Spawn the program; if that fails, the mirror's terminal on the parser thread is closed too. */
  #spawn(onData: (chunk: Uint8Array) => void): ReturnType<PtySessionOptions["spawn"]> {
    try {
      return this.options.spawn(onData);
    } catch (error) {
      this.mirror.dispose();
      throw error;
    }
  }

  /**
   * Kill the process group and whatever left it, close the views, remove the
   * scratch dir. Idempotent: a later call answers the end already under way.
   */
  destroy(reason: string): Promise<void> {
    this.#ending ??= this.#end(reason);
    return this.#ending;
  }

  /** The end under way (the program exited, or `destroy` was called), or null. */
  get ending(): Promise<void> | null {
    return this.#ending;
  }

  async #end(reason: string): Promise<void> {
    this.#destroyed = true;
    this.#closing.abort();
    if (this.#resizeInterval) clearTimeout(this.#resizeInterval);
    await this.views.catchUpBeforeEnd(FINAL_CATCH_UP_WAIT_MS);
    this.views.announce({ type: "exit", code: this.#exitCode, reason });
    this.views.closeAll(CLOSE_SESSION_ENDED, reason.slice(0, 120));
    if (this.#exitCode === null) {
      this.#process.kill("SIGHUP");
      // A program that ignores SIGHUP gets SIGKILL shortly after.
      // The grace timer is cancelled once the program exits: left running, it would hold a stopping server's process open.
      const grace = new AbortController();
      const exited = await Promise.race([
        this.#process.exited.then(() => true),
        delay(KILL_GRACE_MS, false, { signal: grace.signal }).catch(() => false),
      ]);
      grace.abort();
      if (!exited) this.#process.kill("SIGKILL");
    }
    // What the session started outside its process group (setsid, nohup under job control) ends with it too:
    // all of it, where the session has a cgroup; by the scratch dir in its environment, where it has not or it left.
    await this.options.launch.cgroup?.end();
    await killMarkedProcesses(scratchMarks(this.options.scratch.path)).catch((error: unknown) => console.error(`hatch: cannot end the processes of session ${this.id}:`, error));
    this.mirror.dispose();
    // Nothing waits on a destroy that could fail: a scratch dir left behind is removed by the orphan sweep at the next start.
    await this.options.scratch.remove().catch((error: unknown) => console.error(`hatch: cannot remove the scratch dir of session ${this.id}:`, error));
  }
}

/** Least time between two size changes of a session (see PtySession.resize): ten a second keeps a drag smooth. */
const RESIZE_INTERVAL_MS = 100;
/** Output quiet this long after the echo began means the shell has redrawn the line. */
const ECHO_QUIET_MS = 20;
const ECHO_POLL_MS = 4;
/** Give up waiting for an echo after this; the guard has its own, equal bound. */
const ECHO_SETTLE_LIMIT_MS = 250;
/**
 * Unparsed mirror bytes at which the PTY pauses, and below which it resumes:
 * the parser thread manages ~70 MB/s, so 4 MiB is a real backlog, and
 * resuming with 1 MiB still queued keeps it busy while the PTY refills.
 */
const MIRROR_BACKLOG_PAUSE_BYTES = 4 * 1024 * 1024;
const MIRROR_BACKLOG_RESUME_BYTES = 1024 * 1024;
/**
 * Input chunks a view may have queued behind a line waiting for the screen
 * (each wait is at most ECHO_SETTLE_LIMIT_MS): far beyond what a person types
 * meanwhile, small enough that a script cannot queue without bound.
 */
const MAX_QUEUED_INPUTS = 64;
/** Input the program has not read that a session holds at most (four bucket bursts); more is dropped with a notice. */
const MAX_UNWRITTEN_INPUT = 256 * 1024;
/** Stands for a last typist that has detached. */
const GONE_TYPIST = Symbol("a detached view");
/** Longest a session's end waits for the snapshots of views that fell behind (a snapshot normally takes milliseconds). */
const FINAL_CATCH_UP_WAIT_MS = 1000;
/** Time a killed program gets to exit before SIGKILL. */
const KILL_GRACE_MS = 2000;


function byteLength(data: string): number {
  return new TextEncoder().encode(data).length;
}
