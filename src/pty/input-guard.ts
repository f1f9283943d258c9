import { Blocklist, type BlocklistOptions, type LineVerdict } from "./blocklist.ts";
import type { CursorLine } from "../screen/index.ts";
import { ByteLine } from "./byte-line.ts";
import { parseShellLine } from "./shell-words.ts";

/**
 * Line-buffered input screening in front of a PTY. Keystrokes stay
 * interactive: every byte but a line terminator goes to the PTY at once, so
 * the shell echoes as the user types. Only when a line completes (Enter, a
 * newline inside a paste, Ctrl+O, Ctrl+X Ctrl+E) is it checked, before its
 * terminator is sent; vi mode's Esc v, which runs the line too, is checked
 * before its v is sent. A blocked line is never terminated: it is wiped instead.
 *
 * The locally typed buffer is the truth only for plain typing. After arrow
 * keys, Tab, Ctrl+R and the like the shell's line differs from what was typed,
 * so the guard then waits for the screen to settle and checks both the typed
 * buffer and the cursor line of the screen mirror. Plain lines are checked at
 * once, with no added wait on Enter.
 */

/** Collaborators of one guard, usually supplied by the session per view. */
export interface InputGuardOptions extends BlocklistOptions {
  /** Bytes for the PTY, in order. */
  forward(bytes: string): void;
  /** The screen mirror's cursor line (the logical line, wrapped rows joined, and rows above that may start it), once the output so far is parsed. */
  currentLine(): Promise<CursorLine>;
  /** Resolves once the PTY output caused by the bytes forwarded so far is in the mirror. */
  settled(): Promise<void>;
  /** A line was refused; `reason` is a short sentence for the user and the audit log. */
  onBlocked(reason: string, line: string): void;
  /** The line check; defaults to a `Blocklist` built from the path options. */
  checkLine?(line: string): LineVerdict;
  /** Upper bound on waiting for `settled()`; defaults to `ECHO_WAIT_MS`. */
  echoWaitMs?: number;
  /** Upper bound on waiting for `currentLine()`; defaults to `SCREEN_READ_LIMIT_MS`. */
  screenReadLimitMs?: number;
  /**
   * True while a full-screen program (alternate screen) runs. Its cursor line
   * is an editor's or pager's text, not a command line, so only the typed
   * buffer is checked then, with no wait.
   */
  fullScreen?(): boolean;
}

/**
 * Kills the line being edited without running it, wherever the cursor is:
 * Ctrl+E moves to its end in readline's emacs mode, zsh and fish; the End key
 * (`Esc [ F`) does in readline's vi insert mode too, where Ctrl+E is only a
 * character (Ctrl+U there would kill just what is before the cursor, and leave
 * the rest for the next Enter); then Ctrl+U erases back to the start. In a
 * cooked tty both are ordinary characters and Ctrl+U (VKILL) erases the whole
 * line with them.
 */
export const LINE_KILL = "\x05\x1b[F\x15";
/** Ctrl+G: readline's abort, which cancels a pending prefix key (Ctrl+X, Esc) and numeric argument. */
const ABORT_KEY = "\x07";
const ESCAPE = "\x1b";
/**
 * How long an edited line waits for the shell's echo to reach the mirror.
 * Local shells answer in a few milliseconds; the bound keeps a flooding
 * background job from stalling Enter forever.
 */
export const ECHO_WAIT_MS = 250;
/**
 * How long an edited line waits for its screen line. The answer comes from
 * the parser thread every session shares, behind the output queued there
 * before it, normally within milliseconds; past this the line is refused
 * (the user is told and may press Enter again) rather than run unchecked,
 * or left waiting with every key typed after it.
 */
export const SCREEN_READ_LIMIT_MS = 5_000;
/** The reason given for a refused Ctrl+X e. */
export const KEYBOARD_MACRO = "keyboard macros (Ctrl+X e) replay keys that cannot be checked";
/** The reason given for a line whose screen line could not be read. */
export const SCREEN_UNREADABLE = "the screen could not be read in time to check this line; try again";
/** Longest line held for screening; a longer one is refused rather than checked in part. */
export const MAX_LINE_CHARS = 256 * 1024;
/**
 * Longest continued prefix (a trailing backslash, `|`, `&&` or `||`, an open quote) carried into the next line. Each line
 * re-checks the whole prefix, so the cap keeps a stream of short continued
 * lines from costing quadratic time; past it lines are refused until Ctrl+C.
 */
export const MAX_CONTINUED_CHARS = 16 * 1024;
/** Bracketed paste markers (xterm mode 2004). */
const PASTE_START = "\x1b[200~";
const PASTE_END = "\x1b[201~";
/** Longest escape sequence followed; anything longer is not a key and is just passed on. */
const MAX_ESCAPE_CHARS = 64;
/** Prompt endings ("$ ", "# ", "% ", "❯ ", "→ ", powerline's "", "(reverse-i-search)`x': "): where a command may start on the screen line. */
const PROMPT_END = /[$#%>❯➜→⇒➤▶λ»›⟩\ue0b0\ue0b1\]):]\s+/g;
/** Prompt endings considered per line: a prompt has a handful at most. */
const MAX_PROMPT_CANDIDATES = 8;

/**
 * Screens one view's input stream. `push` calls are serialized: input order is
 * preserved even while a line waits for the screen.
 *
 * @example
 * const guard = new InputGuard({ forward: (b) => pty.write(b), currentLine: () => mirror.currentLine(),
 *   settled: () => mirror.settled(), onBlocked: (reason) => view.control({ type: "blocked", reason }),
 *   protectedPaths: [config.dataDir], allowedPaths: [scratch.path] });
 * await guard.push("ls -la\r");
 */
export class InputGuard {
  readonly #options: InputGuardOptions;
  readonly #checkLine: (line: string) => LineVerdict;
  readonly #echoWaitMs: number;
  readonly #screenReadLimitMs: number;
  #buffer = "";
  /** The same line as readline edits it outside a UTF-8 locale, where Backspace takes a byte. */
  readonly #bytes = new ByteLine();
  #continued = "";
  #edited = false;
  #overflow = false;
  #inPaste = false;
  #escape: string | null = null;
  #out = "";
  #inFlight = 0;
  #tail: Promise<void> = Promise.resolve();
  #closed = false;
  /** The last key was Ctrl+X: a Ctrl+E now is readline's edit-and-execute-command, which runs the line. */
  #afterCtrlX = false;

  constructor(options: InputGuardOptions) {
    this.#options = options;
    if (options.checkLine) {
      const check = options.checkLine;
      this.#checkLine = (line) => check.call(options, line);
    } else {
      const blocklist = new Blocklist(options);
      this.#checkLine = (line) => blocklist.checkLine(line);
    }
    this.#echoWaitMs = options.echoWaitMs ?? ECHO_WAIT_MS;
    if (!Number.isFinite(this.#echoWaitMs) || this.#echoWaitMs < 0) throw new RangeError(`Cannot wait ${this.#echoWaitMs} ms for the echo`);
    this.#screenReadLimitMs = options.screenReadLimitMs ?? SCREEN_READ_LIMIT_MS;
    if (!Number.isFinite(this.#screenReadLimitMs) || this.#screenReadLimitMs < 0) throw new RangeError(`Cannot wait ${this.#screenReadLimitMs} ms for the screen`);
  }

  /** Chunks pushed and not yet fully dealt with (waiting behind a line that waits for the screen). */
  get backlog(): number {
    return this.#inFlight;
  }

  /**
   * The shell's line may hold what this guard never saw (another view typed
   * it, or this view is new): the next line is checked against the screen.
   */
  lineMayDiffer(): void {
    this.#edited = true;
  }

  /** Drop everything still queued and forward nothing more (its view is gone). */
  close(): void {
    this.#closed = true;
  }

  /**
   * Screen and forward a chunk of input. Plain typing is handled before this
   * returns; the promise settles once the chunk has been fully dealt with.
   */
  push(data: string): Promise<void> {
    if (this.#closed) return Promise.resolve();
    if (this.#inFlight === 0) {
      try {
        const pending = this.#run(data, 0);
        if (!pending) return Promise.resolve();
        return this.#track(pending);
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return this.#track(this.#tail.then(() => this.#run(data, 0)));
  }

  #track(work: Promise<void>): Promise<void> {
    this.#inFlight++;
    this.#tail = work.then(
      () => void this.#inFlight--,
      () => void this.#inFlight--,
    );
    return work;
  }

  /** Handle `data` from `from` on; returns a promise only when a line must wait for the screen. */
  #run(data: string, from: number): Promise<void> | undefined {
    if (this.#closed) return undefined;
    for (let i = from; i < data.length; i++) {
      const pending = this.#step(data[i]!);
      if (pending) return pending.then(() => this.#run(data, i + 1));
    }
    this.#flush();
    return undefined;
  }

  #step(c: string): Promise<void> | undefined {
    // Esc then v: vi mode's edit-and-execute-command, which runs the line through $VISUAL with no Enter.
    // Esc or Ctrl+X then Enter: one key to bash's emacs mode (M-C-m, C-x C-m, unbound: it beeps and the line
    // stays), but accept-line in vi's command mode. Either way the line is checked; it does not end here.
    // Esc Ctrl+E is bash's shell-expand-line: it runs each $(…) in the line at once, with no Enter.
    // Esc # is insert-comment (M-# in emacs mode, # in vi's command mode): it accepts the line, and with a
    // numeric argument (Esc 1 Esc #) takes a leading # off first, so a commented-out line runs.
    const escapeV = this.#escape === ESCAPE && (c === "v" || c === "\x05" || c === "#");
    const prefixedEnter = (this.#escape === ESCAPE || this.#afterCtrlX) && (c === "\r" || c === "\n");
    // Ctrl+X e replays the keyboard macro recorded with Ctrl+X ( … Ctrl+X ): keys (an Enter among them) the
    // shell runs without them passing here again. It is withheld; Ctrl+G cancels the Ctrl+X the shell holds.
    if (this.#afterCtrlX && c === "e" && !this.#inPaste) {
      this.#afterCtrlX = false;
      this.#flush();
      this.#options.forward(ABORT_KEY);
      this.#options.onBlocked(KEYBOARD_MACRO, this.#continued + this.#buffer);
      return undefined;
    }
    if ((escapeV || prefixedEnter) && !this.#inPaste) {
      this.#escape = null;
      this.#afterCtrlX = false;
      this.#edited = true;
      return this.#guardEditAndExecute(c);
    }
    if (this.#escape !== null && this.#continueEscape(c)) return undefined;
    // A key after Ctrl+X is a command (Ctrl+X ( records a macro, Ctrl+X Ctrl+U undoes), never inserted text.
    if (this.#afterCtrlX && c >= " " && c !== "\x7f" && !this.#inPaste) {
      this.#afterCtrlX = false;
      this.#out += c;
      this.#edited = true;
      return undefined;
    }
    const editAndExecute = c === "\x05" && this.#afterCtrlX;
    this.#afterCtrlX = c === "\x18" && !this.#inPaste;
    const isTerminator = c === "\r" || c === "\n" || (!this.#inPaste && (c === "\x0f" || editAndExecute));
    if (isTerminator) return this.#complete(c);
    // Ctrl+D on a non-empty line hands it to a cooked-mode reader (dash, cat) without a newline.
    if (c === "\x04" && !this.#inPaste && this.#buffer !== "") return this.#complete(c, { keepLine: true });
    this.#out += c;
    if (c === "\x1b") this.#escape = c;
    // Inside a paste the shell inserts every other character literally.
    else if (this.#inPaste) this.#append(c);
    else if (c === "\x7f" || c === "\x08") {
      // Past ASCII the guard cannot know what one Backspace takes: readline in a UTF-8 locale erases a whole
      // character (with its combining marks), in another (the C locale of an image without LANG) one byte of
      // it, and a lone surrogate reaches it as U+FFFD. The screen says which.
      if (NON_ASCII_LAST.test(this.#buffer)) this.#edited = true;
      this.#buffer = dropLastCharacter(this.#buffer);
      this.#bytes.eraseByte();
    }
    else if (c === "\x15") {
      // The line is gone, however long it had grown: what follows is a new one, short enough to screen.
      this.#buffer = "";
      this.#bytes.clear();
      this.#overflow = false;
    }
    else if (c === "\x17") {
      this.#buffer = withoutLastWord(this.#buffer);
      this.#bytes.replaceWith(withoutLastWord);
    }
    else if (c === "\x03") {
      this.#reset({ clearContinuation: true });
      // bash drops the line only once it handles the SIGINT: keys that reach it first are added to the line it
      // redraws (and its first character is lost, so `#rm -rf /` runs uncommented). The keys after a Ctrl+C wait
      // until the shell has answered it.
      this.#flush();
      return within(this.#options.settled(), this.#echoWaitMs).then(() => {});
    }
    // Tab, Ctrl+R, Ctrl+P, Ctrl+Y...: the shell's line now differs from what was typed.
    else if (c < " ") this.#edited = true;
    else {
      // Outside a UTF-8 locale readline reads a byte past ASCII as Meta plus a key (é is M-C M-)), a command
      // rather than text, so the line is not what was typed: the screen says what it is.
      if (c > "\x7f") this.#edited = true;
      this.#append(c);
    }
    return undefined;
  }

  /** Feed one character to the escape sequence in progress; false when it ended the sequence without using `c`. */
  #continueEscape(c: string): boolean {
    const seq = this.#escape!;
    const code = c.charCodeAt(0);
    const csi = seq.startsWith("\x1b[");
    const consumed =
      seq === "\x1b" ? c === "[" || c === "O" || code >= 0x20 : csi ? code >= 0x20 && code <= 0x7e : code >= 0x20;
    if (!consumed) {
      this.#endEscape(seq);
      return false;
    }
    this.#out += c;
    const next = seq + c;
    const finished = seq === "\x1b" ? c !== "[" && c !== "O" : csi ? code >= 0x40 || next.length >= MAX_ESCAPE_CHARS : true;
    if (finished) this.#endEscape(next);
    else this.#escape = next;
    return true;
  }

  #endEscape(seq: string): void {
    this.#escape = null;
    if (seq === PASTE_START) this.#inPaste = true;
    else if (seq === PASTE_END) this.#inPaste = false;
    else this.#edited = true;
  }

  #append(c: string): void {
    if (this.#buffer.length >= MAX_LINE_CHARS) this.#overflow = true;
    else {
      this.#buffer += c;
      this.#bytes.append(c);
    }
  }

  /** A line is complete: check it, then forward `terminator` or wipe the line. */
  #complete(terminator: string, { keepLine = false } = {}): Promise<void> | undefined {
    return whenJudged(this.#judge(), ([verdict, line]) => this.#decide(terminator, verdict, line, keepLine));
  }

  /**
   * Esc v: in vi's command mode it runs the line through $VISUAL, in emacs mode
   * (Alt+v) bash does nothing and the line stays. So the line is checked before
   * the v goes but does not end. Blocked, the v is withheld and Ctrl+G goes in
   * its place: after the Esc the shell reads the next key as part of it (in
   * zsh Esc A would run the line), so no wipe is safe, but Esc Ctrl+G is an
   * abort everywhere (readline's abort, zsh's send-break), which also drops a
   * numeric argument (Esc 1) still waiting, and any key the user sends next is
   * then a key of its own. The line stays marked edited either way, so its
   * Enter is checked against the screen.
   */
  #guardEditAndExecute(key: string): Promise<void> | undefined {
    const insertComment = key === "#";
    return whenJudged(this.#judge({ uncommented: insertComment }), ([verdict, line]) => {
      if (this.#closed) return;
      if (!verdict.blocked) {
        this.#options.forward(key);
        // insert-comment accepted the line: what follows is a new one, known from the screen only.
        if (insertComment) this.#reset({ clearContinuation: true });
        this.#edited ||= insertComment;
        return;
      }
      this.#options.forward(ABORT_KEY);
      this.#reset({ clearContinuation: false });
      this.#edited = true;
      this.#options.onBlocked(verdict.reason, line);
    });
  }

  /**
   * The verdict on the line as it stands: at once for plain typing, once the
   * screen settled for an edited line. `uncommented`: read it also with its
   * leading `#` taken off, as insert-comment with an argument runs it.
   */
  #judge({ uncommented = false } = {}): Judgement | Promise<Judgement> {
    this.#flush();
    const typed = this.#continued + this.#buffer;
    if (this.#overflow || this.#continued.length > MAX_CONTINUED_CHARS) return [{ blocked: true, reason: "line too long to screen" }, typed];
    // After a line ending in a backslash the shell may read this one as its continuation, or (the backslash
    // was in a comment or in single quotes) on its own: check both.
    const lines = this.#continued === "" ? [typed] : [typed, this.#buffer];
    // Outside a UTF-8 locale readline's Backspace took bytes, not characters: check that line too.
    const bytes = this.#bytes.reading();
    if (bytes !== null) lines.push(...(this.#continued === "" ? [bytes] : [this.#continued + bytes, bytes]));
    // A paste carries line-edit keys literally, but a reader without readline (dash, bash --noediting)
    // gets them in cooked mode, where the tty applies them: check the line as both would read it.
    const readings = [...new Set(lines.flatMap((line) => [line, applyLineEdits(line)]))];
    if (!this.#edited || this.#options.fullScreen?.()) return this.#firstBlocked(withUncommented(readings, uncommented), typed);
    return this.#screenEdited(typed, readings, uncommented);
  }

  /** Check what was typed and what the screen shows, once the shell's echo has arrived. */
  async #screenEdited(typed: string, readings: string[], uncommented: boolean): Promise<[LineVerdict, string]> {
    await within(this.#options.settled(), this.#echoWaitMs);
    const read = await within(this.#options.currentLine(), this.#screenReadLimitMs);
    // Fail closed: an edited line is only known from the screen.
    if (read === null) return [{ blocked: true, reason: SCREEN_UNREADABLE }, typed];
    const { line, before } = read;
    const screen = line.trimEnd();
    // A line the shell redrew at the wrap may start on a line above that is not marked as wrapping into it:
    // read it from the prompts at the start of each of those as well, nearest first.
    const commands = promptSuffixes(screen);
    for (let i = before.length - 1; i >= 0; i--) commands.push(...promptSuffixes(before.slice(i).join("") + screen, before[i]!.length));
    return this.#firstBlocked(withUncommented([...readings, screen, ...commands.map((s) => this.#continued + s)], uncommented), typed);
  }

  /** The first reading of a line that is blocked, or "allowed" for `typed`. */
  #firstBlocked(readings: string[], typed: string): [LineVerdict, string] {
    for (const line of readings) {
      const verdict = this.#checkLine(line);
      if (verdict.blocked) return [verdict, line];
    }
    return [{ blocked: false }, typed];
  }

  #decide(terminator: string, verdict: LineVerdict, line: string, keepLine: boolean): undefined {
    // Closed while the line waited for the screen: neither its terminator nor a wipe goes out.
    if (this.#closed) return undefined;
    if (verdict.blocked) {
      // Inside a bracketed paste the shell inserts control keys literally, so
      // close the paste, wipe, and reopen it for the rest of the pasted text.
      // After Ctrl+X the wipe's own Ctrl+E would run the line: Ctrl+G cancels the prefix first.
      const wipe = terminator === "\x05" ? ABORT_KEY + LINE_KILL : LINE_KILL;
      this.#options.forward(this.#inPaste ? PASTE_END + wipe + PASTE_START : wipe);
      // A blocked continuation line keeps its prefix, so retyping the tail alone is still caught.
      this.#reset({ clearContinuation: false });
      this.#options.onBlocked(verdict.reason, line);
      return undefined;
    }
    this.#options.forward(terminator);
    if (keepLine) return undefined;
    if (terminator === "\x0f") {
      // Ctrl+O (operate-and-get-next) runs the line and puts the next one from history on the prompt.
      this.#reset({ clearContinuation: true });
      this.#edited = true;
      return undefined;
    }
    let backslashes = 0;
    while (this.#buffer[this.#buffer.length - 1 - backslashes] === "\\") backslashes++;
    const typed = this.#continued + this.#buffer;
    this.#reset({ clearContinuation: true });
    // "rm -rf \" then "/" is one command to the shell: keep the prefix for the next line.
    if (backslashes % 2 === 1) this.#continued = typed.slice(0, -1);
    else {
      // So is "env |" then "grep -i token": the shell asks for the rest of the pipeline; and
      // 'echo "' then '"; rm -rf /': a quote left open takes the newline and the next line into the same word.
      // Not under a full-screen program: an editor's prose is full of apostrophes that no later line closes.
      const { endsInOperator, endsOpen } = parseShellLine(typed);
      if (endsInOperator || (endsOpen && !this.#options.fullScreen?.())) this.#continued = typed + "\n";
    }
    return undefined;
  }

  #reset({ clearContinuation }: { clearContinuation: boolean }): void {
    this.#buffer = "";
    this.#bytes.clear();
    this.#edited = false;
    this.#overflow = false;
    if (clearContinuation) this.#continued = "";
  }

  #flush(): void {
    if (this.#out === "" || this.#closed) return;
    const out = this.#out;
    this.#out = "";
    this.#options.forward(out);
  }
}

/** `readings`, and when `uncommented` each with its leading `#`s (and the blanks before them) taken off. */
function withUncommented(readings: string[], uncommented: boolean): string[] {
  return uncommented ? [...readings, ...readings.map((line) => line.replace(/^\s*#+/, ""))] : readings;
}

/** A verdict and the reading of the line it is about. */
type Judgement = [LineVerdict, string];

/** Apply `then` to a judgement now, or once it is ready. */
function whenJudged(judged: Judgement | Promise<Judgement>, then: (judgement: Judgement) => void): Promise<void> | undefined {
  if (judged instanceof Promise) return judged.then(then);
  then(judged);
  return undefined;
}

/** Where a command may begin on a screen line that starts with a prompt. */
function promptSuffixes(screen: string, promptsBefore = screen.length): string[] {
  const suffixes: string[] = [];
  for (const match of screen.matchAll(PROMPT_END)) {
    if (suffixes.length >= MAX_PROMPT_CANDIDATES || match.index >= promptsBefore) break;
    suffixes.push(screen.slice(match.index + match[0].length));
  }
  return suffixes;
}

/**
 * The line a cooked-mode tty hands its reader: Ctrl+U kills the line,
 * Backspace/DEL erase a character, Ctrl+W a word, Ctrl+V (literal next)
 * vanishes and takes the character after it as it is, and Ctrl+D vanishes
 * (the reader gets the text before it early, and reads on).
 */
function applyLineEdits(text: string): string {
  if (!/[\x15\x7f\x08\x17\x16\x04]/.test(text)) return text;
  let line = "";
  let literal = false;
  for (const c of text) {
    if (literal) {
      line += c;
      literal = false;
    } else if (c === "\x16") literal = true;
    else if (c === "\x15") line = "";
    else if (c === "\x7f" || c === "\x08") line = dropLastCodePoint(line);
    else if (c === "\x17") line = withoutLastWord(line);
    // Ctrl+D (VEOF) mid-line hands the reader what is typed so far and vanishes; the reader reads on to the newline.
    else if (c !== "\x04") line += c;
  }
  return line;
}

/** Ctrl+W (unix-word-rubout): the blanks before the cursor, then the word before them. */
function withoutLastWord(text: string): string {
  let end = text.length;
  while (end > 0 && /\s/.test(text[end - 1]!)) end--;
  while (end > 0 && !/\s/.test(text[end - 1]!)) end--;
  return text.slice(0, end);
}

/** A line ending in a code point that joins the character before it, which readline erases with it. */
const ZERO_WIDTH_LAST = /[\p{M}\u200d\ufe00-\ufe0f]$/u;
/** A line ending past ASCII (a lone surrogate included). */
const NON_ASCII_LAST = /[^\x00-\x7f]$/;

/** Backspace as readline does it: the last character with the zero-width code points after it. */
function dropLastCharacter(text: string): string {
  let rest = text;
  while (ZERO_WIDTH_LAST.test(rest)) rest = dropLastCodePoint(rest);
  return dropLastCodePoint(rest);
}

function dropLastCodePoint(text: string): string {
  const last = text.charCodeAt(text.length - 1);
  const before = text.charCodeAt(text.length - 2);
  // A lone low surrogate is one character (U+FFFD on its way to the PTY), not half of the one before it.
  const pair = last >= 0xdc00 && last <= 0xdfff && before >= 0xd800 && before <= 0xdbff;
  return text.slice(0, pair ? -2 : -1);
}

/** The value of `promise`, or null if it fails or takes longer than `ms`. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([promise.catch(() => null), new Promise<null>((resolve) => (timer = setTimeout(resolve, ms, null)))]);
  } finally {
    clearTimeout(timer);
  }
}

