import { expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { foregroundDirectory, shellInForeground } from "../../src/pty/foreground-program.ts";
import { bunTerminalBackend, type PtyProcess } from "../../src/pty/index.ts";
import { waitFor } from "../helpers/wait-for.ts";

/** A shell on a real PTY, with job control, whose output is kept. */
function shellOnPty(program: string) {
  let output = "";
  const pty = bunTerminalBackend({
    argv: [program, "--norc", "--noprofile", "-i"],
    cwd: "/",
    env: { PATH: "/usr/bin:/bin", TERM: "xterm-256color", PS1: "$ " },
    cols: 80,
    rows: 24,
    onData: (chunk) => (output += new TextDecoder().decode(chunk)),
  });
  return { pty, seen: () => output };
}

async function run(shell: { pty: PtyProcess; seen(): string }, command: string, token: string) {
  shell.pty.write(`${command}\r`);
  await waitFor(() => shell.seen().includes(token), token);
}

test("at the prompt the shell leads the terminal's foreground; under a program it started, that program does", async () => {
  const shell = shellOnPty("/bin/bash");
  try {
    await run(shell, "echo ready-$((1+1))", "ready-2");
    expect(shellInForeground(shell.pty.pid, "/bin/bash")).toBe(true);
    // The alternate screen changes nothing the kernel knows, nor does a new name.
    await run(shell, "printf '\\e[?1049h'; printf vim > /proc/$$/comm; echo alt-$((2+2))", "alt-4");
    expect(shellInForeground(shell.pty.pid, "/bin/bash")).toBe(true);
    shell.pty.write("sleep 30\r");
    await waitFor(() => shellInForeground(shell.pty.pid, "/bin/bash") === false, "sleep to take the foreground");
    shell.pty.write("\x03");
    await waitFor(() => shellInForeground(shell.pty.pid, "/bin/bash") === true, "the shell to take the foreground back");
  } finally {
    shell.pty.kill("SIGKILL");
  }
});

test("a shell started through a symlink named like an editor is still a shell", async () => {
  const dir = mkdtempSync(join(tmpdir(), "hatch-fg-"));
  const shell = shellOnPty("/bin/bash");
  try {
    symlinkSync("/bin/bash", join(dir, "vim"));
    await run(shell, `exec ${dir}/vim --norc --noprofile -i`, "$ ");
    await run(shell, "echo in-$((2+5))", "in-7");
    expect(shellInForeground(shell.pty.pid, "/bin/bash")).toBe(true);
  } finally {
    shell.pty.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a shell that is not on the list counts when it is the session's own", async () => {
  const dir = mkdtempSync(join(tmpdir(), "hatch-fg-"));
  const renamed = join(dir, "operator-shell");
  copyFileSync("/bin/bash", renamed);
  const shell = shellOnPty(renamed);
  try {
    await run(shell, "echo ready-$((3+3))", "ready-6");
    expect(shellInForeground(shell.pty.pid, renamed)).toBe(true);
    expect(shellInForeground(shell.pty.pid, "/bin/bash")).toBe(false);
  } finally {
    shell.pty.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a process that is gone cannot be told about: null", async () => {
  const gone = Bun.spawn(["true"]);
  await gone.exited;
  expect(shellInForeground(gone.pid, "/bin/bash")).toBeNull();
});

test("the working directory is the foreground shell's, a nested shell's once it has the keyboard", async () => {
  const shell = shellOnPty("/bin/bash");
  try {
    await run(shell, "cd /tmp && echo in-$((1+2))", "in-3");
    expect(foregroundDirectory(shell.pty.pid)).toBe("/tmp");
    await run(shell, "bash --norc --noprofile -i", "$ ");
    await run(shell, "cd /usr && echo nested-$((2+3))", "nested-5");
    expect(foregroundDirectory(shell.pty.pid)).toBe("/usr");
  } finally {
    shell.pty.kill("SIGKILL");
  }
  expect(foregroundDirectory(2 ** 22 + 1)).toBeNull();
});
