import { describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultShellDeps, selectShell, type ShellDeps } from "../../src/pty/shell-selection.ts";

/** A host with exactly these files; every lookup is recorded. */
function host(files: string[], env: Record<string, string | undefined> = {}, platform = "linux") {
  const probed: string[] = [];
  const deps: ShellDeps = {
    platform,
    env,
    isFile(path) {
      probed.push(path);
      return files.includes(path);
    },
  };
  return { deps, probed };
}

const DEBIAN = ["/bin/bash", "/usr/bin/bash", "/bin/sh", "/usr/bin/sh", "/usr/bin/zsh"];

describe("step 1: the operator override HATCH_SHELL", () => {
  test("is used when the named binary exists, for both purposes", () => {
    const { deps } = host([...DEBIAN, "/opt/fish/bin/fish"], { HATCH_SHELL: "/opt/fish/bin/fish", SHELL: "/usr/bin/zsh" });
    expect(selectShell("interactive", deps)).toBe("/opt/fish/bin/fish");
    expect(selectShell("runner", deps)).toBe("/opt/fish/bin/fish");
  });

  test("a bare name is found on PATH", () => {
    const { deps } = host([...DEBIAN, "/usr/local/bin/fish"], { HATCH_SHELL: "fish", PATH: "/usr/local/bin:/usr/bin" });
    expect(selectShell("interactive", deps)).toBe("/usr/local/bin/fish");
  });

  test("is ignored when the binary does not exist", () => {
    const { deps } = host(DEBIAN, { HATCH_SHELL: "/opt/missing/zsh", SHELL: "/usr/bin/zsh" });
    expect(selectShell("interactive", deps)).toBe("/usr/bin/zsh");
  });

  test("a relative path with a separator is refused rather than resolved against some cwd", () => {
    const { deps } = host([...DEBIAN, "bin/zsh"], { HATCH_SHELL: "bin/zsh" });
    expect(selectShell("interactive", deps)).toBe("/bin/bash");
  });
});

describe("step 2: Windows", () => {
  test("uses COMSPEC when it exists, whatever its spelling, and never probes POSIX paths", () => {
    const { deps, probed } = host(["C:\\Windows\\system32\\cmd.exe"], { ComSpec: "C:\\Windows\\system32\\cmd.exe", SHELL: "/bin/bash" }, "win32");
    expect(selectShell("interactive", deps)).toBe("C:\\Windows\\system32\\cmd.exe");
    expect(probed.filter((p) => p.startsWith("/"))).toEqual([]);
  });

  test("falls back to bare cmd.exe when COMSPEC is unset or missing", () => {
    expect(selectShell("interactive", host([], {}, "win32").deps)).toBe("cmd.exe");
    expect(selectShell("runner", host([], { COMSPEC: "D:\\gone\\cmd.exe" }, "win32").deps)).toBe("cmd.exe");
  });

  test("HATCH_SHELL still wins, found on Path with a PATHEXT suffix", () => {
    const { deps } = host(["C:\\Program Files\\PowerShell\\7\\pwsh.exe"], {
      HATCH_SHELL: "pwsh",
      Path: "relative;C:\\Program Files\\PowerShell\\7",
      COMSPEC: "C:\\Windows\\system32\\cmd.exe",
    }, "win32");
    expect(selectShell("interactive", deps)).toBe("C:\\Program Files\\PowerShell\\7\\pwsh.exe");
  });
});

describe("step 3: interactive prefers $SHELL, the runner prefers bash", () => {
  test("interactive uses $SHELL when it exists", () => {
    expect(selectShell("interactive", host(DEBIAN, { SHELL: "/usr/bin/zsh" }).deps)).toBe("/usr/bin/zsh");
  });

  test("interactive skips a $SHELL that does not exist", () => {
    expect(selectShell("interactive", host(DEBIAN, { SHELL: "/usr/bin/nushell" }).deps)).toBe("/bin/bash");
  });

  test("a $SHELL that refuses logins (a service account's nologin or false, which systemd passes on for User=) is skipped, for both purposes", () => {
    for (const shell of ["/usr/sbin/nologin", "/sbin/nologin", "/bin/false", "/usr/bin/false", "/bin/true"]) {
      const deps = host([...DEBIAN, shell], { SHELL: shell }).deps;
      expect({ shell, interactive: selectShell("interactive", deps) }).toEqual({ shell, interactive: "/bin/bash" });
      const bare = host([shell], { SHELL: shell }).deps;
      expect({ shell, runner: selectShell("runner", bare) }).toEqual({ shell, runner: "sh" });
    }
  });

  test("the runner picks bash even when $SHELL is zsh", () => {
    expect(selectShell("runner", host(DEBIAN, { SHELL: "/usr/bin/zsh" }).deps)).toBe("/bin/bash");
  });

  test("the runner prefers a POSIX sh to $SHELL when there is no bash", () => {
    expect(selectShell("runner", host(["/bin/sh", "/usr/bin/zsh"], { SHELL: "/usr/bin/zsh" }).deps)).toBe("/bin/sh");
  });

  test("the runner consults $SHELL last, before handing bare sh to the OS", () => {
    expect(selectShell("runner", host(["/opt/busybox/ash"], { SHELL: "/opt/busybox/ash", PATH: "/usr/bin" }).deps)).toBe("/opt/busybox/ash");
  });
});

describe("step 4: the bash chain, the sh chain, then bare sh", () => {
  test("/bin/bash first", () => {
    expect(selectShell("interactive", host(DEBIAN).deps)).toBe("/bin/bash");
  });

  test("then /usr/bin/bash", () => {
    expect(selectShell("interactive", host(["/usr/bin/bash", "/bin/sh"]).deps)).toBe("/usr/bin/bash");
  });

  test("then bash on PATH, skipping empty and relative entries", () => {
    const { deps, probed } = host(["/opt/homebrew/bin/bash", "./bash", "bash", "/bin/sh"], { PATH: ":.:/usr/local/bin:/opt/homebrew/bin/" });
    expect(selectShell("runner", deps)).toBe("/opt/homebrew/bin/bash");
    expect(probed).toEqual(["/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash", "/opt/homebrew/bin/bash"]);
  });

  test("then /bin/sh, /usr/bin/sh and sh on PATH", () => {
    expect(selectShell("interactive", host(["/bin/sh", "/usr/bin/sh"]).deps)).toBe("/bin/sh");
    expect(selectShell("interactive", host(["/usr/bin/sh"]).deps)).toBe("/usr/bin/sh");
    expect(selectShell("interactive", host(["/sbin/sh"], { PATH: "/usr/bin:/sbin" }).deps)).toBe("/sbin/sh");
  });

  test("finally bare sh, left to the OS", () => {
    const { deps, probed } = host([], { PATH: "/usr/bin" });
    expect(selectShell("interactive", deps)).toBe("sh");
    expect(probed).toEqual(["/bin/bash", "/usr/bin/bash", "/usr/bin/bash", "/bin/sh", "/usr/bin/sh", "/usr/bin/sh"]);
  });
});

describe("defaultShellDeps: the real filesystem", () => {
  test("counts only existing executable regular files", () => {
    const dir = mkdtempSync(join(tmpdir(), "hatch-shell-"));
    try {
      const exe = join(dir, "myshell");
      const plain = join(dir, "notes.txt");
      writeFileSync(exe, "#!/bin/sh\n");
      chmodSync(exe, 0o755);
      writeFileSync(plain, "text");
      chmodSync(plain, 0o644);
      const { isFile } = defaultShellDeps({}, "linux");
      expect([isFile(exe), isFile(plain), isFile(dir), isFile(join(dir, "missing"))]).toEqual([true, false, false, false]);
      expect(selectShell("interactive", defaultShellDeps({ HATCH_SHELL: exe }, "linux"))).toBe(exe);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("finds a real shell on this machine", () => {
    const shell = selectShell("runner", defaultShellDeps({ PATH: "/usr/bin:/bin" }, "linux"));
    expect(shell.startsWith("/")).toBe(true);
  });
});
