import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { attached, createSession, localSource, runAndSee } from "../helpers/terminal.ts";
import type { TerminalClient } from "../helpers/terminal-client.ts";
import { ECHO_WAIT_MS } from "../../src/pty/input-guard.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { startWorld, type World } from "../helpers/world.ts";

/** As the project's owner, open session "s" on Container Root and attach to it. */
async function ownerAtContainerRoot(world: World) {
  const owner = await world.signedIn(await world.project(), "owner");
  await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
  return { owner, terminal: await attached(world, owner, "s") };
}

/** Once the shell ran a later line, the blocked one had its chance: it never touched its marker, and the client was told. */
async function expectBlockedNeverRan(terminal: TerminalClient, marker: string): Promise<void> {
  await runAndSee(terminal, "echo after-$((6*7))", "after-42");
  expect(existsSync(marker)).toBe(false);
  expect(terminal.controls.some((c) => c.type === "blocked")).toBe(true);
}

/** Harmless probes: each line is blocked by the screen, and would only touch a marker if it ran. */
describe("line-buffered input screening", () => {
  test("a blocked line never executes; the client gets blocked with a reason and the audit log gets terminal.blocked", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
    const terminal = await attached(world, owner, "s");
    const marker = join(world.tempDir("marker"), "blocked-ran");
    terminal.type(`touch ${marker}; cat /etc/shadow > /dev/null\r`);
    const blocked = await terminal.control("blocked");
    expect(blocked.reason).toBe("access to the password hashes (/etc/shadow)");
    await runAndSee(terminal, "echo after-$((2*21))", "after-42");
    expect(existsSync(marker)).toBe(false);
    const audit = await waitFor(() => world.platform.audit.query({ projectId: project.id, action: "terminal.blocked" })[0], "terminal.blocked");
    expect(audit).toMatchObject({ userId: owner.user.id, target: "s", detail: { reason: blocked.reason } });
  });

  test("a blocked line recalled from history is caught too", async () => {
    await using world = await startWorld();
    const { terminal } = await ownerAtContainerRoot(world);
    const marker = join(world.tempDir("marker"), "recalled-ran");
    // Put the line into history without running it: a leading `#` makes it a comment.
    await runAndSee(terminal, `#touch ${marker}; cat ~/.ssh/id_rsa`, "id_rsa");
    // Recall it, remove the `#` (Home, Delete), then Enter: the typed bytes alone hold no command.
    terminal.type("\x1b[A");
    await terminal.sees(/id_rsa[\s\S]*id_rsa/);
    terminal.type("\x01\x1b[3~\r");
    await terminal.control("blocked");
    await runAndSee(terminal, "echo next-$((7*6))", "next-42");
    expect(existsSync(marker)).toBe(false);
  });

  test("a pasted block with a blocked line in the middle runs the lines around it only", async () => {
    await using world = await startWorld();
    const { terminal } = await ownerAtContainerRoot(world);
    const before = join(world.tempDir("marker"), "before");
    const bad = join(world.tempDir("marker"), "bad");
    const after = join(world.tempDir("marker"), "after");
    terminal.type(`touch ${before}\rtouch ${bad}; printenv HATCH_SECRET_KEY\rtouch ${after}\r`);
    await terminal.control("blocked");
    await waitFor(() => existsSync(after), "the line after the blocked one");
    expect(existsSync(before)).toBe(true);
    expect(existsSync(bad)).toBe(false);
  });

  test("a paste carrying Ctrl+U is screened as a shell without line editing reads it", async () => {
    await using world = await startWorld();
    const { terminal } = await ownerAtContainerRoot(world);
    const marker = join(world.tempDir("marker"), "bypass-ran");
    // Without readline the tty's cooked mode applies Ctrl+U itself: the shell would run only what follows it.
    await runAndSee(terminal, "set +o emacs +o vi; echo cooked-$((3*3))", "cooked-9");
    terminal.type(`\x1b[200~true\x15printenv HATCH_SECRET_KEY; touch ${marker} #\x1b[201~\r`);
    await terminal.control("blocked");
    await runAndSee(terminal, "echo after-$((6*7))", "after-42");
    expect(existsSync(marker)).toBe(false);
  });

  test("input past the token bucket is dropped with a notice and the session lives on", async () => {
    await using world = await startWorld();
    const { terminal } = await ownerAtContainerRoot(world);
    const chunk = "#".repeat(60 * 1024);
    terminal.type(chunk);
    terminal.type(chunk);
    const notice = await terminal.control("notice");
    expect(notice.message).toContain("too fast");
    terminal.type("\x15");
    await runAndSee(terminal, "echo alive-$((8*8))", "alive-64");
  });

  test("a blocked line typed on one connection is caught when a reconnect sends the Enter", async () => {
    await using world = await startWorld();
    const { owner, terminal: first } = await ownerAtContainerRoot(world);
    const marker = join(world.tempDir("marker"), "reconnect-ran");
    first.type(`touch ${marker}; cat /etc/shadow > /dev/null`);
    await first.sees("/etc/shadow");
    first.close();
    await first.closed;
    const second = await attached(world, owner, "s");
    second.type("\r");
    await second.control("blocked");
    await runAndSee(second, "echo after-$((6*7))", "after-42");
    expect(existsSync(marker)).toBe(false);
  });

  test("a blocked line typed by the lease holder is caught when a view that took control sends the Enter", async () => {
    await using world = await startWorld();
    const { owner, terminal: first } = await ownerAtContainerRoot(world);
    const second = await attached(world, owner, "s");
    const marker = join(world.tempDir("marker"), "handoff-ran");
    first.type(`touch ${marker}; cat /etc/shadow > /dev/null`);
    await second.sees("/etc/shadow");
    second.send({ type: "takeControl" });
    await second.control("lease", (c) => c.you === true);
    second.type("\r");
    await second.control("blocked");
    await runAndSee(second, "echo after-$((6*7))", "after-42");
    expect(existsSync(marker)).toBe(false);
  });

  test("a blocked line run with Ctrl+X Ctrl+E (edit-and-execute) is caught", async () => {
    await using world = await startWorld();
    const { terminal } = await ownerAtContainerRoot(world);
    const marker = join(world.tempDir("marker"), "edit-exec-ran");
    // An "editor" that leaves the line as it is: bash then runs it.
    await runAndSee(terminal, "export VISUAL=true; echo set-$((1+1))", "set-2");
    terminal.type(`touch ${marker}; cat /etc/shadow > /dev/null\x18\x05`);
    await terminal.control("blocked");
    await runAndSee(terminal, "echo after-$((6*7))", "after-42");
    expect(existsSync(marker)).toBe(false);
  });

  describe("a shell that switched to the alternate screen itself is still a shell", () => {
    /** Switch to the alternate screen at the prompt, then run a blocked line recalled from readline's kill ring: nothing typed holds it. */
    async function runKilledAndYankedLine(terminal: TerminalClient, marker: string): Promise<void> {
      await runAndSee(terminal, "printf '\\e[?1049h'; echo alt-$((2*3))", "alt-6");
      await terminal.control("fullScreen", (c) => c.active === true);
      terminal.type(`touch ${marker}; cat /etc/shadow > /dev/null`);
      await terminal.sees("/etc/shadow");
      terminal.type("\x15\x19\r");
    }

    test("on the Container Root tab", async () => {
      await using world = await startWorld();
      const { terminal } = await ownerAtContainerRoot(world);
      const marker = join(world.tempDir("marker"), "alt-screen-ran");
      await runKilledAndYankedLine(terminal, marker);
      await terminal.control("blocked");
      await runAndSee(terminal, "echo after-$((6*7))", "after-42");
      expect(existsSync(marker)).toBe(false);
    });

    test("that renamed itself (/proc/self/comm says vim)", async () => {
      await using world = await startWorld();
      const { terminal } = await ownerAtContainerRoot(world);
      const marker = join(world.tempDir("marker"), "renamed-shell-ran");
      await runAndSee(terminal, "printf vim > /proc/$$/comm; echo renamed-$((1+1))", "renamed-2");
      await runKilledAndYankedLine(terminal, marker);
      await terminal.control("blocked");
      await runAndSee(terminal, "echo after-$((6*7))", "after-42");
      expect(existsSync(marker)).toBe(false);
    });

    test("on a confined source tab", async () => {
      await using world = await startWorld();
      const project = await world.project();
      const docs = localSource(world, project, "docs", { member: "rwx" });
      const member = await world.signedIn(project, "member");
      await createSession(member.client, { sourceSlug: "docs", id: "s" });
      const terminal = await attached(world, member, "s");
      const marker = join(docs.root, "alt-screen-ran");
      await runKilledAndYankedLine(terminal, marker);
      await terminal.control("blocked");
      await runAndSee(terminal, "echo after-$((6*7))", "after-42");
      expect(existsSync(marker)).toBe(false);
    });
  });

  test("under a real full-screen program an edited line is the editor's text: Enter reaches it even when the text looks blocked", async () => {
    await using world = await startWorld();
    const { terminal } = await ownerAtContainerRoot(world);
    const file = join(world.tempDir("vim"), "notes.sh");
    writeFileSync(file, "cat /etc/shadow\n");
    terminal.type(`vim -u NONE -N ${file}\r`);
    await terminal.control("fullScreen", (c) => c.active === true);
    await terminal.sees("cat /etc/shadow");
    // Append, step left (an edit), split the line with Enter, then save.
    terminal.type("A\x1b[D\r");
    terminal.type("\x1b:wq\r");
    await waitFor(() => readFileSync(file, "utf8") === "cat /etc/shado\nw\n", "vim to save the split line");
    expect(terminal.controls.filter((c) => c.type === "blocked")).toEqual([]);
  });

  test("a blocked line run from vi mode's command mode with v (edit-and-execute) is caught", async () => {
    await using world = await startWorld();
    const { terminal } = await ownerAtContainerRoot(world);
    const marker = join(world.tempDir("marker"), "vi-edit-exec-ran");
    await runAndSee(terminal, "set -o vi; export VISUAL=true; echo set-$((1+1))", "set-2");
    terminal.type(`touch ${marker}; cat /etc/shadow > /dev/null`);
    await terminal.sees("/etc/shadow");
    // Escape to command mode, then v: bash hands the line to $VISUAL and runs what it leaves.
    terminal.type("\x1b");
    terminal.type("v");
    await terminal.control("blocked");
    // The v was withheld and the line left as it is: an Enter on it is checked against the screen and refused too.
    terminal.type("\r");
    await terminal.control("blocked", (c) => c !== terminal.controls.find((f) => f.type === "blocked"));
    // S (vi's substitute-line) replaces it; the next command runs.
    await runAndSee(terminal, "Secho after-$((6*7))", "after-42");
    expect(existsSync(marker)).toBe(false);
  });

  test("Alt+v in emacs mode (unbound: the line stays) does not end the line for the guard", async () => {
    await using world = await startWorld();
    const { terminal } = await ownerAtContainerRoot(world);
    const marker = join(world.tempDir("marker"), "alt-v-split-ran");
    await runAndSee(terminal, "echo ready-$((1+1))", "ready-2");
    terminal.type(`touch ${marker}; cat /etc/sh`);
    await terminal.sees("/etc/sh");
    // Checked at the v ("…/etc/sh" is allowed); the rest is typed onto the same line, whose Enter is checked on the screen.
    terminal.type("\x1bv");
    await Bun.sleep(ECHO_WAIT_MS + 100);
    terminal.type("adow > /dev/null\r");
    await terminal.control("blocked");
    await runAndSee(terminal, "echo after-$((6*7))", "after-42");
    expect(existsSync(marker)).toBe(false);
  });

  for (const [name, prefix] of [["Esc Enter", "\x1b\r"], ["Esc Ctrl+J", "\x1b\n"], ["Ctrl+X Enter", "\x18\r"]] as const) {
    test(`${name} (one unbound key in bash's emacs mode: it beeps and the line stays) does not end the line for the guard`, async () => {
      await using world = await startWorld();
      const { terminal } = await ownerAtContainerRoot(world);
      const marker = join(world.tempDir("marker"), "split-ran");
      await runAndSee(terminal, "echo ready-$((1+1))", "ready-2");
      terminal.type(`touch ${marker}; cat /etc/sh`);
      await terminal.sees("/etc/sh");
      terminal.type(prefix);
      await Bun.sleep(ECHO_WAIT_MS + 100);
      // The shell's line is now the whole "touch …; cat /etc/shadow > /dev/null": checked whole, it never runs.
      terminal.type("adow > /dev/null\r");
      await expectBlockedNeverRan(terminal, marker);
    });
  }

  test("a line after a comment (or single quotes) ending in a backslash is checked on its own too: the shell runs it on its own", async () => {
    await using world = await startWorld();
    const { terminal } = await ownerAtContainerRoot(world);
    const marker = join(world.tempDir("marker"), "after-comment-ran");
    // In a comment a trailing backslash continues nothing: bash prints a fresh prompt.
    await runAndSee(terminal, "echo ready-$((1+1)) # see C:\\", "ready-2");
    terminal.type(`touch ${marker}; cat /etc/shadow > /dev/null\r`);
    await expectBlockedNeverRan(terminal, marker);
  });

  test("a line ending in a pipe is checked with the line that completes it: `env |` then `grep -i token` never runs", async () => {
    await using world = await startWorld();
    const { terminal } = await ownerAtContainerRoot(world);
    const marker = join(world.tempDir("marker"), "pipeline-ran");
    await runAndSee(terminal, "echo ready-$((1+1))", "ready-2");
    // Bash runs nothing of the list until its last line: the touch would run with the grep.
    terminal.type(`touch ${marker}; env |\r`);
    await terminal.sees("> ");
    terminal.type("grep -i token\r");
    await terminal.control("blocked");
    // The shell still waits for the pipeline's end: Ctrl+C drops it, as a user would.
    // The tty flushes typeahead on SIGINT: the next line waits for the fresh prompt.
    terminal.type("\x03");
    await terminal.sees(/\^C[\s\S]*[#$] $/);
    await expectBlockedNeverRan(terminal, marker);
  });

  test("a line bash redrew at the wrap, split on the screen without a wrap mark, is still read whole", async () => {
    await using world = await startWorld();
    const { terminal } = await ownerAtContainerRoot(world);
    const marker = join(world.tempDir("marker"), "redrawn-ran");
    await runAndSee(terminal, "PS1='$ '; echo ready-$((1+1))", "ready-2");
    // "$ " and the line's start fill the 80 columns exactly. Typed past the edge and erased back to it,
    // the rest is printed by bash on the next row itself: xterm marks no wrap there.
    const start = `touch ${marker}; cat /etc/sh`;
    const padded = start.replace(";", ";" + " ".repeat(78 - start.length));
    terminal.type(`${padded}XXXX\x7f\x7f\x7f\x7f`);
    await terminal.sees(/XXXX[\s\S]*\x08/);
    // Then the end, and the missing "ad" put back with the arrow keys: the typed bytes spell "/etc/show > /dev/nullad".
    const end = "ow > /dev/null";
    terminal.type(end);
    await terminal.sees(end);
    terminal.type("\x1b[D".repeat(end.length) + "ad\r");
    await expectBlockedNeverRan(terminal, marker);
  });

  test("Backspace after a combining mark erases the whole character in readline, and the guard's line agrees", async () => {
    await using world = await startWorld();
    const { terminal } = await ownerAtContainerRoot(world);
    const marker = join(world.tempDir("marker"), "combining-backspace-ran");
    await runAndSee(terminal, "echo ready-$((1+1))", "ready-2");
    // In a UTF-8 locale readline's backward-delete-char takes "x" and its combining acute together:
    // the shell's line is "…/etc/shadow", while the typed bytes less one code point read "…/etc/shadxow".
    terminal.type(`touch ${marker}; cat /etc/shadx\u0301\x7fow > /dev/null\r`);
    await expectBlockedNeverRan(terminal, marker);
  });

  test("in the C locale (an image without LANG) Backspace erases a byte of é, not the character: that reading is checked too", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "c", env: { LANG: "C", LC_ALL: "C" } });
    const terminal = await attached(world, owner, "c");
    const marker = join(world.tempDir("marker"), "c-locale-ran");
    // Debian's /etc/inputrc: 8-bit bytes are inserted as they are, not read as Meta keys.
    await runAndSee(terminal, "bind 'set input-meta on'; bind 'set convert-meta off'; echo ready-$((1+1))", "ready-2");
    // é is two bytes; each Backspace takes one, so the shell's line is "…/etc/shadow" (the screen, decoding UTF-8, shows "…/etc/shaow"), while the typed
    // characters, edited a character at a time, read "…/etc/shaow".
    terminal.type(`touch ${marker}; cat /etc/shad\u00e9\x7f\x7fow > /dev/null\r`);
    await expectBlockedNeverRan(terminal, marker);
  });

  test("a paste carrying Ctrl+V (the tty's literal-next) is screened as a shell without line editing reads it", async () => {
    await using world = await startWorld();
    const { terminal } = await ownerAtContainerRoot(world);
    const marker = join(world.tempDir("marker"), "lnext-ran");
    await runAndSee(terminal, "set +o emacs +o vi; echo cooked-$((3*3))", "cooked-9");
    // Cooked mode: Ctrl+U kills the echoed paste marker, Ctrl+V vanishes and quotes the "d" after it; the `#` comments out the end marker.
    terminal.type(`\x1b[200~\x15touch ${marker}; cat /etc/sha\x16dow > /dev/null #\x1b[201~\r`);
    await expectBlockedNeverRan(terminal, marker);
  });

  test("input a view queued behind a line waiting for the screen is not forwarded once another view took control", async () => {
    await using world = await startWorld();
    const { owner, terminal: first } = await ownerAtContainerRoot(world);
    const second = await attached(world, owner, "s");
    await runAndSee(first, "echo ready-$((1+1))", "ready-2");
    const marker = join(world.tempDir("marker"), "queued-ran");
    // Ctrl+A on an empty line echoes nothing, so its Enter waits the whole screen bound; the touch queues behind it.
    first.type("\x01\r");
    first.type(`touch ${marker}\r`);
    second.send({ type: "takeControl" });
    await second.control("lease", (c) => c.you === true);
    await runAndSee(second, "echo after-$((6*7))", "after-42");
    // The first view's queue is dealt with once its line's wait for the screen ends.
    await Bun.sleep(ECHO_WAIT_MS + 100);
    expect(existsSync(marker)).toBe(false);
  });

  test("input queued behind lines waiting for the screen is bounded: past it keys are dropped with a notice, and the session lives on", async () => {
    await using world = await startWorld();
    const { terminal } = await ownerAtContainerRoot(world);
    await runAndSee(terminal, "echo ready-$((1+1))", "ready-2");
    // Ctrl+A marks each line edited, so each Enter waits for the screen; two bytes each are far inside the byte rate.
    for (let i = 0; i < 500; i++) terminal.type("\x01\r");
    const notice = await terminal.control("notice");
    expect(notice.message).toContain("too fast");
    await waitFor(async () => {
      terminal.type("echo alive-$((8*8))\r");
      return terminal.sees("alive-64", 1_000).then(() => true, () => false);
    }, "the shell to run a command once the queue drained", 30_000);
  });

  test("bash's keyboard macro cannot replay an Enter past the screen: Ctrl+X e is refused", async () => {
    await using world = await startWorld();
    const { terminal } = await ownerAtContainerRoot(world);
    const marker = join(world.tempDir("marker"), "macro-ran");
    // A macro that is just Enter: the Enter on an empty line is checked, and allowed.
    terminal.type("\x18(\r\x18)");
    await runAndSee(terminal, "echo rec-$((6*7))", "rec-42");
    terminal.type(`touch ${marker}; cat /etc/shadow > /dev/null\x18e`);
    expect((await terminal.control("blocked")).reason).toBe("keyboard macros (Ctrl+X e) replay keys that cannot be checked");
    terminal.type("\x15");
    await expectBlockedNeverRan(terminal, marker);
  });

  test("a blocked command substitution does not run through shell-expand-line (Esc Ctrl+E), which needs no Enter", async () => {
    await using world = await startWorld();
    const { terminal } = await ownerAtContainerRoot(world);
    const marker = join(world.tempDir("marker"), "expand-ran");
    terminal.type(`echo $(touch ${marker}; cat /etc/shadow > /dev/null)\x1b\x05`);
    expect((await terminal.control("blocked")).reason).toBe("access to the password hashes (/etc/shadow)");
    // The Esc reached bash, which reads the next key with it: Ctrl+G (abort) ends it, Ctrl+U clears the line.
    terminal.type("\x07\x15");
    await expectBlockedNeverRan(terminal, marker);
  });
});

describe("lines that would run past the screen", () => {
  test("in vi mode a blocked line is not wiped (Ctrl+E is self-insert there), and the next bare Enter runs it", async () => {
    await using world = await startWorld();
    const { terminal } = await ownerAtContainerRoot(world);
    const marker = join(world.tempDir("marker"), "vi-wipe-ran");
    await runAndSee(terminal, "set -o vi; echo ready-$((1+1))", "ready-2");
    terminal.type(`touch ${marker}; cat /etc/shadow > /dev/null`);
    await terminal.sees("/etc/shadow");
    // Home moves the cursor to the start of the line (vi insert mode keeps it there); the Enter is refused.
    terminal.type("\x1b[H");
    await Bun.sleep(ECHO_WAIT_MS);
    terminal.type("\r");
    await terminal.control("blocked");
    // The user presses Enter again on what looks like an empty line to the guard.
    await Bun.sleep(ECHO_WAIT_MS);
    terminal.type("\r");
    await Bun.sleep(ECHO_WAIT_MS + 300);
    await runAndSee(terminal, "echo after-$((6*7))", "after-42");
    expect(existsSync(marker)).toBe(false);
  });

  test("insert-comment with a numeric argument (Esc 1 Esc #) uncomments the line and runs it with no Enter: it is checked first", async () => {
    await using world = await startWorld();
    const { terminal } = await ownerAtContainerRoot(world);
    const marker = join(world.tempDir("marker"), "insert-comment-ran");
    await runAndSee(terminal, "echo ready-$((1+1))", "ready-2");
    terminal.type(`#touch ${marker}; cat /etc/shadow > /dev/null`);
    await terminal.sees("/etc/shadow");
    terminal.type("\x1b1\x1b#");
    await terminal.control("blocked");
    // Blocked, the # is withheld and the line stays (any key after the Esc would be read with it): Ctrl+C drops it.
    terminal.type("\x03");
    await runAndSee(terminal, "echo after-$((6*7))", "after-42");
    expect({ ran: existsSync(marker), blocked: terminal.controls.some((c) => c.type === "blocked") }).toEqual({ ran: false, blocked: true });
  });

  test("keys sent with a Ctrl+C are not added to the line it drops (bash would run `#touch …` uncommented)", async () => {
    await using world = await startWorld();
    const { terminal } = await ownerAtContainerRoot(world);
    const marker = join(world.tempDir("marker"), "after-ctrl-c-ran");
    await runAndSee(terminal, "echo ready-$((1+1))", "ready-2");
    terminal.type(`#touch ${marker}; `);
    await terminal.sees(marker);
    // One frame: bash handles the SIGINT after it read the rest, which it would add to the redrawn line, eating its #.
    terminal.type("\x03echo after-$((6*7))\r");
    await terminal.sees("after-42");
    await runAndSee(terminal, "echo later-$((7*7))", "later-49");
    expect(existsSync(marker)).toBe(false);
  });

  test("Ctrl+O (operate-and-get-next) leaves the next history line on the prompt: its Enter is checked against the screen", async () => {
    await using world = await startWorld();
    const { terminal } = await ownerAtContainerRoot(world);
    const dir = world.tempDir("marker");
    const marker = join(dir, "operate-and-get-next-ran");
    const history = join(dir, "history");
    writeFileSync(history, `echo first-$((1+1))\ntouch ${marker}; cat /etc/shadow > /dev/null\n`);
    await runAndSee(terminal, `history -r ${history}; echo ready-$((1+1))`, "ready-2");
    // Up twice reaches "echo first…"; Ctrl+O runs it (checked: harmless) and puts the line after it on the prompt.
    terminal.type("\x1b[A");
    await terminal.sees(/ready-2[\s\S]*\/etc\/shadow/);
    terminal.type("\x1b[A");
    await Bun.sleep(ECHO_WAIT_MS);
    terminal.type("\x0f");
    await terminal.sees("first-2");
    await Bun.sleep(ECHO_WAIT_MS);
    terminal.type("\r");
    await Bun.sleep(ECHO_WAIT_MS + 300);
    await runAndSee(terminal, "echo after-$((6*7))", "after-42");
    expect({ ran: existsSync(marker), blocked: terminal.controls.some((c) => c.type === "blocked") }).toEqual({ ran: false, blocked: true });
  });

  test("a line recalled from history under a prompt ending in '→ ' is judged by its command, not by the prompt's first word", async () => {
    await using world = await startWorld();
    const { terminal } = await ownerAtContainerRoot(world);
    const marker = join(world.tempDir("marker"), "arrow-prompt-ran");
    await runAndSee(terminal, "PS1='→ '; echo ready-$((1+1))", "ready-2");
    // Into history as a comment (allowed), then recalled, its `#` removed (Home, Delete), and run.
    await runAndSee(terminal, `#printenv HATCH_SECRET_KEY; touch ${marker}`, "→ ");
    terminal.type("\x1b[A");
    await Bun.sleep(ECHO_WAIT_MS);
    terminal.type("\x01\x1b[3~\r");
    await Bun.sleep(ECHO_WAIT_MS + 300);
    await runAndSee(terminal, "echo after-$((6*7))", "after-42");
    expect({ ran: existsSync(marker), blocked: terminal.controls.some((c) => c.type === "blocked") }).toEqual({ ran: false, blocked: true });
  });

  test("code handed to the shell through PROMPT_COMMAND is screened as eval's is (the create body refuses the same variable)", async () => {
    await using world = await startWorld();
    const { terminal } = await ownerAtContainerRoot(world);
    const marker = join(world.tempDir("marker"), "prompt-command-ran");
    // `eval 'printenv HATCH_SECRET_KEY'` is refused; the same text in PROMPT_COMMAND runs at the next prompt.
    terminal.type(`PROMPT_COMMAND='printenv HATCH_SECRET_KEY; touch ${marker}'\r`);
    await Bun.sleep(ECHO_WAIT_MS + 300);
    await runAndSee(terminal, "echo after-$((6*7))", "after-42");
    expect({ ran: existsSync(marker), blocked: terminal.controls.some((c) => c.type === "blocked") }).toEqual({ ran: false, blocked: true });
  });
});

describe("code handed to the shell through MAILPATH", () => {
  test("a typed MAILPATH assignment is screened as a PROMPT_COMMAND one is: its message's $(…) runs at a later prompt", async () => {
    await using world = await startWorld();
    const { terminal } = await ownerAtContainerRoot(world);
    const dir = world.tempDir("mail");
    const mailFile = join(dir, "mbox");
    writeFileSync(mailFile, "");
    const marker = join(dir, "mailpath-ran");
    // `eval 'touch …; cat /etc/shadow'` is refused; the same text as a mail message runs once the file changes.
    terminal.type(`MAILCHECK=0 MAILPATH='${mailFile}?$(touch ${marker}; printenv HATCH_SECRET_KEY)'\r`);
    await Bun.sleep(ECHO_WAIT_MS + 300);
    await runAndSee(terminal, "echo after-$((6*7))", "after-42");
    await Bun.sleep(1100);
    writeFileSync(mailFile, "From someone\n");
    await runAndSee(terminal, "echo later-$((6*7))", "later-42");
    await runAndSee(terminal, "echo last-$((6*7))", "last-42");
    expect({ ran: existsSync(marker), blocked: terminal.controls.some((c) => c.type === "blocked") }).toEqual({ ran: false, blocked: true });
  });
});

describe("code bound to a key", () => {
  test("`bind -x` text is screened as a command line of its own: it runs at its key, with no Enter to check", async () => {
    await using world = await startWorld();
    const { terminal } = await ownerAtContainerRoot(world);
    const marker = join(world.tempDir("marker"), "bind-x-ran");
    terminal.type(`bind -x '"\\C-t": "touch ${marker}; printenv HATCH_SECRET_KEY"'\r`);
    await Bun.sleep(ECHO_WAIT_MS + 300);
    await runAndSee(terminal, "echo after-$((6*7))", "after-42");
    terminal.type("\x14");
    await Bun.sleep(ECHO_WAIT_MS + 300);
    await runAndSee(terminal, "echo last-$((6*7))", "last-42");
    expect({ ran: existsSync(marker), blocked: terminal.controls.some((c) => c.type === "blocked") }).toEqual({ ran: false, blocked: true });
  });
});

describe("the shell's working directory", () => {
  test("a relative path into the data dir is refused from its parent, whether the cd came in an earlier line or the same one", async () => {
    await using world = await startWorld();
    const { terminal } = await ownerAtContainerRoot(world);
    const marker = join(world.tempDir("marker"), "relative-ran");
    const dataDir = world.config.dataDir;
    const [parent, name] = [dirname(dataDir), basename(dataDir)];
    await runAndSee(terminal, `cd ${parent} && echo moved-$((3*3))`, "moved-9");
    terminal.type(`touch ${marker}; ls ${name} > /dev/null\r`);
    expect((await terminal.control("blocked")).reason).toBe("access to a protected hatch directory");
    await runAndSee(terminal, "cd / && echo back-$((4*4))", "back-16");
    terminal.type(`cd ${parent} && touch ${marker}; ls ./${name} > /dev/null\r`);
    await Bun.sleep(ECHO_WAIT_MS + 300);
    await runAndSee(terminal, "echo after-$((6*7))", "after-42");
    expect({ ran: existsSync(marker), blocked: terminal.controls.filter((c) => c.type === "blocked").length }).toEqual({ ran: false, blocked: 2 });
  });
});

describe("the session's home", () => {
  test("a data dir inside the home is protected when named through ~ as when named in full", async () => {
    const home = mkdtempSync(join(tmpdir(), "hatch-home-"));
    try {
      const dataDir = join(home, "hatch", "data");
      await using world = await startWorld({ HATCH_DATA_DIR: dataDir }, { baseEnv: { ...process.env, HOME: home } });
      const { terminal } = await ownerAtContainerRoot(world);
      const marker = join(world.tempDir("marker"), "home-data-ran");
      // In full it is refused.
      terminal.type(`ls ${dataDir} > /dev/null\r`);
      expect((await terminal.control("blocked")).reason).toBe("access to a protected hatch directory");
      terminal.type(`touch ${marker}; ls ~/hatch/data > /dev/null\r`);
      await Bun.sleep(ECHO_WAIT_MS + 300);
      await runAndSee(terminal, "echo after-$((6*7))", "after-42");
      expect({ ran: existsSync(marker), blocked: terminal.controls.filter((c) => c.type === "blocked").length }).toEqual({ ran: false, blocked: 2 });
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe("a data dir on a path with a space", () => {
  test("its key and database are refused by name, quoted or escaped, as they are on a path without one", async () => {
    // HATCH_DATA_DIR="/srv/hatch data" (or "…/Team (prod)/data"): a path the operator may well choose.
    using parent = tempDir("space");
    {
      const dataDir = join(parent.path, "hatch data");
      await using world = await startWorld({ HATCH_DATA_DIR: dataDir });
      const { owner } = await ownerAtContainerRoot(world);
      const lines = [`cat '${dataDir}/secret.key'`, `cat "${dataDir}/secret.key"`, `cat ${dataDir.replace(" ", "\\ ")}/secret.key`];
      const answers = [];
      for (const command of lines) {
        const answer = await owner.client.post("/api/packages/agent/terminal/sessions/s/exec", { command });
        answers.push({ command, status: answer.status, code: answer.body.error?.code ?? `ran, printed ${String(answer.body.output).length} characters` });
      }
      expect(answers).toEqual(lines.map((command) => ({ command, status: 403, code: "command_blocked" })));
      // Words with a space that name nothing protected still run.
      const fine = await owner.client.post("/api/packages/agent/terminal/sessions/s/exec", { command: `echo 'hatch data'; ls '${parent.path}'` });
      expect(fine.body.output).toBe("hatch data\nhatch data\n");
    }
  });
});
