import { describe, expect, test } from "bun:test";
import { Blocklist } from "../../src/pty/blocklist.ts";
import { InputGuard, LINE_KILL, MAX_CONTINUED_CHARS, MAX_LINE_CHARS, KEYBOARD_MACRO, SCREEN_UNREADABLE, type InputGuardOptions } from "../../src/pty/input-guard.ts";

const PASTE_START = "\x1b[200~";
const PASTE_END = "\x1b[201~";
const UP = "\x1b[A";

/** A guard in front of a recording "PTY", with a screen line the test sets. */
function harness(overrides: Partial<InputGuardOptions> = {}) {
  const forwarded: string[] = [];
  const blocked: { reason: string; line: string }[] = [];
  const screen = { line: "", before: [] as string[] };
  let settledCalls = 0;
  const blocklist = new Blocklist({ protectedPaths: ["/srv/hatch/data"], home: "/home/ada" });
  const guard = new InputGuard({
    forward: (bytes) => forwarded.push(bytes),
    currentLine: async () => ({ line: screen.line, before: screen.before }),
    settled: () => {
      settledCalls++;
      return Promise.resolve();
    },
    onBlocked: (reason, line) => blocked.push({ reason, line }),
    checkLine: (line) => blocklist.checkLine(line),
    ...overrides,
  });
  return {
    guard,
    screen,
    blocked,
    /** Everything the PTY received, as one string. */
    pty: () => forwarded.join(""),
    settledCalls: () => settledCalls,
  };
}

/** A promise the test resolves by hand. */
function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe("plain typing", () => {
  test("every keystroke reaches the PTY at once, and a plain Enter is checked with no wait", () => {
    const h = harness({ settled: () => Promise.reject(new Error("plain lines must not wait for the screen")) });
    void h.guard.push("l");
    expect(h.pty()).toBe("l");
    void h.guard.push("s -la");
    void h.guard.push("\r");
    // No await: the terminator went through synchronously.
    expect(h.pty()).toBe("ls -la\r");
    expect(h.blocked).toEqual([]);
  });

  test("a blocked line is wiped instead of terminated, and the reason reported", async () => {
    const h = harness();
    await h.guard.push("rm -rf /\r");
    expect(h.pty()).toBe("rm -rf /" + LINE_KILL);
    expect(h.blocked).toEqual([{ reason: "recursive delete of /", line: "rm -rf /" }]);
    await h.guard.push("ls\r");
    expect(h.pty()).toBe("rm -rf /" + LINE_KILL + "ls\r");
  });

  test("Backspace, Ctrl+U, Ctrl+W and Ctrl+C edit the typed line as the shell does", async () => {
    const h = harness();
    await h.guard.push("rm -rf /x\x7f\r"); // Backspace leaves "rm -rf /"
    await h.guard.push("rm -rf /\x15ls\r"); // Ctrl+U kills the line, "ls" remains
    await h.guard.push("rm -rf ./build\x17/\r"); // Ctrl+W rubs out "./build"
    await h.guard.push("rm -rf /\x03\r"); // Ctrl+C abandons the line
    expect(h.blocked.map((b) => b.line)).toEqual(["rm -rf /", "rm -rf /"]);
    // Only the Ctrl+C waited for the shell (see below); no Enter did.
    expect(h.settledCalls()).toBe(1);
  });

  test("keys after a Ctrl+C wait until the shell has answered it: bash adds keys that reach it first to the line it drops", async () => {
    const answered = deferred();
    const h = harness({ settled: () => answered.promise });
    const pushed = h.guard.push("#rm -rf /\x03x\r");
    await Bun.sleep(5);
    expect(h.pty()).toBe("#rm -rf /\x03");
    answered.resolve();
    await pushed;
    expect(h.pty()).toBe("#rm -rf /\x03x\r");
  });

  test("a typed character past ASCII sends the line to the screen: outside a UTF-8 locale readline may take its bytes as Meta keys", async () => {
    const h = harness();
    // é is M-C M-) to such a readline: nothing is inserted, and the Backspace takes the x.
    h.screen.line = "$ cat /etc/shadow";
    await h.guard.push("cat /etc/shadx\u00e9\x7fow\r");
    expect(h.settledCalls()).toBe(1);
    expect(h.blocked.map((b) => b.reason)).toEqual(["access to the password hashes (/etc/shadow)"]);
  });

  test("Backspace after a character past ASCII is read both ways: a character (UTF-8 locales) and a byte (the C locale)", async () => {
    const h = harness();
    // The screen decodes UTF-8 and shows neither reading: only the byte reading is "/etc/shadow".
    h.screen.line = "$ cat /etc/shaow";
    await h.guard.push("cat /etc/shad\u00e9\x7f\x7fow\r");
    expect(h.blocked).toEqual([{ reason: "access to the password hashes (/etc/shadow)", line: "cat /etc/shadow" }]);
    // A lone low surrogate reaches the PTY as U+FFFD, one character: Backspace takes it alone, not the "/" before it.
    h.screen.line = "$ rm -rf /usr";
    await h.guard.push("rm -rf /\udc00\x7fusr\r");
    expect(h.blocked.map((b) => b.line).at(-1)).toBe("rm -rf /usr");
  });

  test("a line continued with a backslash is checked as the one command the shell sees", async () => {
    const h = harness();
    await h.guard.push("rm -rf \\\r");
    await h.guard.push("/\r");
    expect(h.pty()).toBe("rm -rf \\\r/" + LINE_KILL);
    expect(h.blocked).toEqual([{ reason: "recursive delete of /", line: "rm -rf /" }]);
  });

  test("a line ending in |, |&, && or || is checked joined to the next: the shell reads them as one list", async () => {
    for (const operator of ["|", "|&", "&&", "||"]) {
      const h = harness();
      await h.guard.push(`env ${operator} # dump it\r`);
      await h.guard.push("grep -i token\r");
      expect(h.pty()).toBe(`env ${operator} # dump it\rgrep -i token${LINE_KILL}`);
      expect(h.blocked).toEqual([{ reason: "probe of secret environment variables", line: `env ${operator} # dump it\ngrep -i token` }]);
    }
  });

  test("a line ending inside a quote or substitution is checked joined to the next: the shell reads on into the same word", async () => {
    for (const [first, second] of [['echo "', '"; rm -rf /'], ["echo '", "'; rm -rf /"], ["echo $'", "'; rm -rf /"], ["x=$(true", "); rm -rf /"], ["x=`true", "`; rm -rf /"]]) {
      const h = harness();
      await h.guard.push(`${first}\r`);
      await h.guard.push(`${second}\r`);
      expect(h.pty()).toBe(`${first}\r${second}${LINE_KILL}`);
      expect(h.blocked).toEqual([{ reason: "recursive delete of /", line: `${first}\n${second}` }]);
    }
  });

  test("a finished line (a quoted or trailing-& operator) is not joined to the next", async () => {
    const h = harness();
    await h.guard.push("env 'x |'\r");
    await h.guard.push("sleep 1 &\r");
    await h.guard.push(`echo "it's" # don't\r`);
    await h.guard.push("grep -i token file\r");
    expect(h.blocked).toEqual([]);
  });

  test("Ctrl+D on a non-empty blocked line wipes it instead of handing it to a cooked-mode reader", async () => {
    const h = harness();
    await h.guard.push("reboot\x04");
    expect(h.pty()).toBe("reboot" + LINE_KILL);
    await h.guard.push("\x04");
    expect(h.pty()).toBe("reboot" + LINE_KILL + "\x04");
  });

  test("a line too long to screen is refused", async () => {
    const h = harness();
    await h.guard.push("x".repeat(MAX_LINE_CHARS + 1) + "\r");
    expect(h.blocked.map((b) => b.reason)).toEqual(["line too long to screen"]);
    expect(h.pty().endsWith(LINE_KILL)).toBe(true);
  });

  test("a line grown too long to screen and then killed with Ctrl+U is not refused: what follows is a new line", async () => {
    const h = harness();
    // Keys a busy program never read (its `cat` later did) pile up on what the guard takes for the prompt's line.
    await h.guard.push("a".repeat(MAX_LINE_CHARS + 1));
    await h.guard.push("\x15echo hello\r");
    expect(h.blocked).toEqual([]);
    expect(h.pty().endsWith("\x15echo hello\r")).toBe(true);
  });
});

describe("pastes", () => {
  test("a multi-line paste: earlier lines run, the blocked one is wiped, later ones are still screened", async () => {
    const h = harness();
    await h.guard.push("echo one\nrm -rf /\necho three\ncat ~/.ssh/id_rsa\n");
    expect(h.pty()).toBe("echo one\nrm -rf /" + LINE_KILL + "echo three\ncat ~/.ssh/id_rsa" + LINE_KILL);
    expect(h.blocked.map((b) => b.reason)).toEqual(["recursive delete of /", "access to SSH keys (~/.ssh)"]);
  });

  test("a bracketed paste closes the paste to wipe a blocked line, then reopens it", async () => {
    const h = harness();
    await h.guard.push(`${PASTE_START}echo a\rrm -rf /\recho c\r${PASTE_END}`);
    expect(h.pty()).toBe(`${PASTE_START}echo a\rrm -rf /${PASTE_END}${LINE_KILL}${PASTE_START}echo c\r${PASTE_END}`);
    expect(h.blocked.map((b) => b.line)).toEqual(["rm -rf /"]);
    // Pasted text is plain: nothing waited for the screen.
    expect(h.settledCalls()).toBe(0);
  });

  test("line-edit keys inside a paste are checked as a cooked-mode reader applies them (Ctrl+U, DEL, Ctrl+W, and Ctrl+D, which vanishes)", async () => {
    for (const trick of ["true\x15rm -rf /", "rm -rf /x\x7f", "rm -rf /x\x08", "rm -rf / harmless\x17", "rm -rf \x04/"]) {
      const h = harness();
      await h.guard.push(`${PASTE_START}${trick}${PASTE_END}\r`);
      expect({ trick, reasons: h.blocked.map((b) => b.reason) }).toEqual({ trick, reasons: ["recursive delete of /"] });
      expect(h.pty().endsWith(LINE_KILL)).toBe(true);
    }
    // Read either way, this line is harmless ("/\x15echo" is not "/"; cooked, it is "echo ok"): it goes through whole.
    const h = harness();
    await h.guard.push(`${PASTE_START}rm -rf /\x15echo ok${PASTE_END}\r`);
    expect(h.blocked).toEqual([]);
    expect(h.pty()).toBe(`${PASTE_START}rm -rf /\x15echo ok${PASTE_END}\r`);
  });

  test("paste markers and keys split across chunks are still recognized", async () => {
    const h = harness();
    await h.guard.push("\x1b[20");
    await h.guard.push("0~shutdown now\r");
    expect(h.pty()).toBe(`${PASTE_START}shutdown now${PASTE_END}${LINE_KILL}${PASTE_START}`);
    await h.guard.push("\x1b[201~\x1b");
    await h.guard.push("[A\r");
    expect(h.settledCalls()).toBe(1);
  });
});

describe("lines the shell edited (history, completion, search)", () => {
  test("a recalled line is checked from the screen, after the screen settles", async () => {
    const h = harness();
    await h.guard.push(UP);
    expect(h.pty()).toBe(UP);
    h.screen.line = "ada@box:~$ rm -rf /    ";
    await h.guard.push("\r");
    expect(h.pty()).toBe(UP + LINE_KILL);
    expect(h.blocked).toEqual([{ reason: "recursive delete of /", line: "rm -rf /" }]);
    expect(h.settledCalls()).toBe(1);
  });

  test("an edited line split on the screen without a wrap mark is read from the prompt on the line above", async () => {
    const h = harness();
    await h.guard.push("cat /etc/sha\x1b[D");
    // What bash leaves after a redraw at the wrap: the line's start fills the row above, not marked as wrapping.
    h.screen.before = ["ls: cannot access 'x': No such", "ada@box:~$ cat /etc/sha"];
    h.screen.line = "dow";
    await h.guard.push("\r");
    expect(h.blocked).toEqual([{ reason: "access to the password hashes (/etc/shadow)", line: "cat /etc/shadow" }]);
  });

  test("a harmless recalled line runs", async () => {
    const h = harness();
    h.screen.line = "ada@box:~$ ls -la";
    await h.guard.push(UP + "\r");
    expect(h.pty()).toBe(UP + "\r");
  });

  test("Tab completion is judged by what the shell completed", async () => {
    const h = harness();
    await h.guard.push("rm -rf /et\t");
    h.screen.line = "root@box:/# rm -rf /etc/";
    await h.guard.push("\r");
    expect(h.blocked.map((b) => b.reason)).toEqual(["recursive delete of /etc"]);
  });

  test("Ctrl+R search is judged by the match on the screen", async () => {
    const h = harness();
    await h.guard.push("\x12rm");
    h.screen.line = "(reverse-i-search)`rm': rm -rf ~";
    await h.guard.push("\r");
    expect(h.blocked.map((b) => b.reason)).toEqual(["recursive delete of the home directory"]);
  });

  test("input typed while a line waits for the screen is held back, then forwarded in order", async () => {
    const echo = deferred();
    const h = harness({ settled: () => echo.promise });
    h.screen.line = "$ echo recalled";
    const first = h.guard.push(UP + "\r");
    const second = h.guard.push("ls");
    const third = h.guard.push("\r");
    expect(h.pty()).toBe(UP);
    echo.resolve();
    await Promise.all([first, second, third]);
    expect(h.pty()).toBe(UP + "\rls\r");
  });

  test("a screen that never settles delays Enter only up to the echo bound", async () => {
    const h = harness({ settled: () => new Promise<void>(() => {}), echoWaitMs: 1 });
    h.screen.line = "$ reboot";
    await h.guard.push(UP + "\r");
    expect(h.blocked.map((b) => b.reason)).toEqual(["reboot of the machine"]);
  });

  test("an edited line whose screen line cannot be read in time is refused and wiped, and the keys after it go on", async () => {
    const h = harness({ currentLine: () => new Promise(() => {}), screenReadLimitMs: 1 });
    const enter = h.guard.push(UP + "\r");
    const after = h.guard.push("ls\r");
    await Promise.all([enter, after]);
    expect({ pty: h.pty(), blocked: h.blocked }).toEqual({ pty: UP + LINE_KILL + "ls\r", blocked: [{ reason: SCREEN_UNREADABLE, line: "" }] });
  });

  test("an edited line whose screen line fails to be read (the parser thread died) is refused, not lost", async () => {
    const h = harness({ currentLine: () => Promise.reject(new Error("the parser thread died")) });
    await h.guard.push("ls\t\r");
    expect({ pty: h.pty(), blocked: h.blocked.map((b) => b.reason) }).toEqual({ pty: "ls\t" + LINE_KILL, blocked: [SCREEN_UNREADABLE] });
  });
});

describe("lines run without Enter, lines typed elsewhere, and a closed view", () => {
  test("Esc v (vi's edit-and-execute) is checked before its v goes: a blocked line gets only an abort after the Esc, and stays checked on the screen", async () => {
    const h = harness();
    h.screen.line = "% rm -rf /";
    await h.guard.push("rm -rf /");
    await h.guard.push("\x1b");
    await h.guard.push("v");
    expect(h.blocked.map((b) => b.reason)).toEqual(["recursive delete of /"]);
    // The Esc already reached the shell, which reads the next key with it (zsh's Esc A runs the line): no wipe follows,
    // only Ctrl+G, an abort to every shell, so the user's next key is a key of its own.
    expect(h.pty()).toBe("rm -rf /\x1b\x07");
    await h.guard.push("\r");
    expect(h.blocked).toHaveLength(2);
    expect(h.pty()).toBe("rm -rf /\x1b\x07" + LINE_KILL);
  });

  test("Esc # (insert-comment, which accepts the line, and with Esc 1 first takes its # off) is checked, uncommented, before its # goes", async () => {
    const h = harness();
    h.screen.line = "$ #rm -rf /";
    await h.guard.push("#rm -rf /\x1b1\x1b#");
    expect({ pty: h.pty(), blocked: h.blocked.map((b) => b.reason) }).toEqual({ pty: "#rm -rf /\x1b1\x1b\x07", blocked: ["recursive delete of /"] });
    // Allowed, the # goes, and the line after it is a new one, judged by the screen.
    const allowed = harness();
    allowed.screen.line = "$ #ls";
    await allowed.guard.push("#ls\x1b#");
    allowed.screen.line = "$ cat /etc/shadow";
    await allowed.guard.push("\r");
    expect({ pty: allowed.pty(), blocked: allowed.blocked.map((b) => b.reason) }).toEqual({ pty: "#ls\x1b#" + LINE_KILL, blocked: ["access to the password hashes (/etc/shadow)"] });
  });

  test("Ctrl+O runs the line and puts the next history line on the prompt: the Enter after it is judged by the screen", async () => {
    const h = harness();
    h.screen.line = "$ ls";
    await h.guard.push("ls\x0f");
    h.screen.line = "$ rm -rf /";
    await h.guard.push("\r");
    expect({ pty: h.pty(), blocked: h.blocked.map((b) => b.reason) }).toEqual({ pty: "ls\x0f" + LINE_KILL, blocked: ["recursive delete of /"] });
  });

  test("Esc v allowed (in emacs mode Alt+v is unbound and the line stays) forwards the v and leaves the next Enter checked against the screen", async () => {
    const h = harness();
    h.screen.line = "$ cat /etc/sh";
    await h.guard.push("cat /etc/sh\x1bv");
    expect(h.blocked).toEqual([]);
    expect(h.pty()).toBe("cat /etc/sh\x1bv");
    h.screen.line = "$ cat /etc/shadow";
    await h.guard.push("adow\r");
    expect(h.blocked.map((b) => b.reason)).toEqual(["access to the password hashes (/etc/shadow)"]);
  });

  test("Esc Ctrl+E (shell-expand-line, which runs each $(…) at once) is checked before its Ctrl+E goes", async () => {
    const h = harness();
    h.screen.line = "$ echo $(rm -rf /)";
    await h.guard.push("echo $(rm -rf /)\x1b\x05");
    expect({ pty: h.pty(), blocked: h.blocked.map((b) => b.reason) }).toEqual({ pty: "echo $(rm -rf /)\x1b\x07", blocked: ["recursive delete of /"] });
    const allowed = harness();
    allowed.screen.line = "$ echo $(date)";
    await allowed.guard.push("echo $(date)\x1b\x05");
    expect({ pty: allowed.pty(), blocked: allowed.blocked }).toEqual({ pty: "echo $(date)\x1b\x05", blocked: [] });
  });

  test("Ctrl+X e (replay the keyboard macro, Enter and all) is withheld with a notice; Ctrl+G cancels the Ctrl+X the shell holds", async () => {
    const h = harness();
    await h.guard.push("\x18(\r\x18)");
    await h.guard.push("rm -rf /\x18e");
    expect({ pty: h.pty(), blocked: h.blocked }).toEqual({ pty: "\x18(\r\x18)rm -rf /\x18\x07", blocked: [{ reason: KEYBOARD_MACRO, line: "rm -rf /" }] });
  });

  test("Ctrl+X Ctrl+E (edit-and-execute) ends a line: it is checked, and a blocked one is wiped after Ctrl+G cancels the prefix", async () => {
    const h = harness();
    h.screen.line = "$ rm -rf /";
    await h.guard.push("rm -rf /\x18\x05");
    // The wipe's own Ctrl+E must not complete Ctrl+X Ctrl+E: Ctrl+G (abort) goes first.
    expect(h.pty()).toBe("rm -rf /\x18\x07" + LINE_KILL);
    expect(h.blocked.map((b) => b.reason)).toEqual(["recursive delete of /"]);
    const harmless = harness();
    harmless.screen.line = "$ ls";
    await harmless.guard.push("ls\x18\x05");
    expect(harmless.pty()).toBe("ls\x18\x05");
    // Ctrl+E alone (end of line) and inside a paste are plain keys.
    const plain = harness();
    await plain.guard.push("rm -rf /\x05");
    await plain.guard.push(PASTE_START + "\x18\x05" + PASTE_END);
    expect(plain.blocked).toEqual([]);
  });

  test("after lineMayDiffer (another view typed on the line) a bare Enter is checked against the screen", async () => {
    const h = harness();
    h.guard.lineMayDiffer();
    h.screen.line = "$ touch m; cat /etc/shadow > /dev/null";
    await h.guard.push("\r");
    expect(h.pty()).toBe(LINE_KILL);
    expect(h.blocked.map((b) => b.reason)).toEqual(["access to the password hashes (/etc/shadow)"]);
    expect(h.settledCalls()).toBe(1);
  });

  test("a closed guard drops what was queued behind a line waiting for the screen, and forwards nothing more", async () => {
    const echo = deferred();
    const h = harness({ settled: () => echo.promise });
    h.screen.line = "$ echo recalled";
    const queued = [h.guard.push(UP + "\r"), h.guard.push("touch marker"), h.guard.push("\r")];
    expect(h.guard.backlog).toBe(3);
    h.guard.close();
    echo.resolve();
    await Promise.all(queued);
    await h.guard.push("ls\r");
    expect(h.pty()).toBe(UP);
    expect(h.guard.backlog).toBe(0);
  });
});

test("without a checkLine the guard builds a Blocklist from its path options", async () => {
  const forwarded: string[] = [];
  const reasons: string[] = [];
  const guard = new InputGuard({
    forward: (b) => forwarded.push(b),
    currentLine: async () => ({ line: "", before: [] }),
    settled: async () => {},
    onBlocked: (reason) => reasons.push(reason),
    protectedPaths: ["/srv/hatch/data"],
    allowedPaths: ["/srv/hatch/data/scratch/hatch-scratch-ab"],
  });
  await guard.push("ls /srv/hatch/data\rls /srv/hatch/data/scratch/hatch-scratch-ab\r");
  expect(reasons).toEqual(["access to a protected hatch directory"]);
  expect(forwarded.join("")).toBe("ls /srv/hatch/data" + LINE_KILL + "ls /srv/hatch/data/scratch/hatch-scratch-ab\r");
});

test("under a full-screen program the screen line is an editor's text: only what was typed is checked", async () => {
  const h = harness({ fullScreen: () => true });
  h.screen.line = "rm -rf / # a line of a script open in vim";
  await h.guard.push("\x1b[Bo\r");
  expect(h.pty()).toBe("\x1b[Bo\r");
  expect(h.settledCalls()).toBe(0);
  await h.guard.push("reboot\r");
  expect(h.blocked.map((b) => b.reason)).toEqual(["reboot of the machine"]);
});

test("under a full-screen program a line left inside a quote (prose's apostrophes) is not carried into the next", async () => {
  const h = harness({ fullScreen: () => true });
  // One apostrophe opens a quote; lines of two each never close it.
  await h.guard.push("I don't know.\r");
  for (let i = 0; i <= MAX_CONTINUED_CHARS / 1024; i++) await h.guard.push("It's what we'd do. ".repeat(53) + "\r");
  await h.guard.push("ls\r");
  expect(h.blocked).toEqual([]);
});

test("an endless backslash continuation is refused once too long, until Ctrl+C starts afresh", async () => {
  const h = harness();
  const part = "x".repeat(1024) + " \\\r";
  for (let i = 0; i <= MAX_CONTINUED_CHARS / 1024; i++) await h.guard.push(part);
  await h.guard.push("ls\r");
  expect(h.blocked.map((b) => b.reason)).toEqual(["line too long to screen", "line too long to screen"]);
  await h.guard.push("\x03ls\r");
  expect(h.pty().endsWith("\x03ls\r")).toBe(true);
});

test("a long pathological paste is screened in one linear pass", async () => {
  const h = harness();
  const paste = "a(".repeat(MAX_LINE_CHARS / 4) + "\r" + "\\".repeat(MAX_LINE_CHARS - 1) + "x\r" + "$".repeat(MAX_LINE_CHARS / 2) + "\r";
  await h.guard.push(paste);
  expect(h.blocked).toEqual([]);
  // Every line was screened and let through: the PTY got the whole paste, byte for byte.
  expect(h.pty()).toBe(paste);
});
