/**
 * A confined interactive bash through a real PTY, in both modes: the prompt
 * comes up, job control works (no --new-session for PTYs), the session's own
 * terminal stays usable by path, and the confinement still holds.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { spawn as spawnPty } from "bun-pty";
import { MODES, probeName, Sandbox } from "./sandbox-fixture.ts";

/** Collects terminal output and resolves waits when a marker shows up (no sleeping). */
class Transcript {
  text = "";
  private waiters: { marker: string; resolve: () => void }[] = [];

  push(chunk: string | Uint8Array): void {
    this.text += typeof chunk === "string" ? chunk : new TextDecoder().decode(chunk);
    this.waiters = this.waiters.filter((w) => (this.text.includes(w.marker) ? (w.resolve(), false) : true));
  }

  /** Resolves once `marker` has appeared; the test's own timeout bounds the wait. */
  waitFor(marker: string): Promise<void> {
    if (this.text.includes(marker)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ marker, resolve }));
  }
}

const PROMPT = "CONFINED$ ";

describe.each(MODES)("interactive bash in a PTY (%s)", (mode) => {
  test("the prompt appears, job control works, the own terminal is usable and writes outside stay denied", async () => {
    await using sb = await Sandbox.create(mode);
    const outside = join(sb.visible, probeName("pty"));
    const spec = sb.spec({ argv: ["/bin/bash", "--norc", "--noprofile", "-i"], env: { ...sb.spec().env, PS1: PROMPT, TERM: "xterm-256color" } });
    const cmd = sb.plan(spec); // interactive: no new session, so bash keeps its controlling terminal
    const out = new Transcript();
    const proc = Bun.spawn(cmd.argv, { env: cmd.env, cwd: cmd.cwd, terminal: { cols: 100, rows: 30, data: (_t, d) => out.push(d) } });
    try {
      await out.waitFor(PROMPT);
      proc.terminal!.write(
        `stty size; sleep 60 & jobs; kill %1; wait; echo via-tty > /dev/tty; echo via-stdout > /dev/stdout; echo via-ttyname > "$(tty)"; echo x > '${outside}' || echo DENIED; touch here.txt && echo TOUCHED; echo END-$((40+2))\n`,
      );
      await out.waitFor("END-42");
      expect(out.text).toContain("30 100");
      expect(out.text).toMatch(/\[1\]\+\s+Running\s+sleep 60 &/);
      expect(out.text).toContain("via-tty");
      expect(out.text).toContain("via-stdout");
      expect(out.text).toContain("\nvia-ttyname");
      expect(out.text).toContain("DENIED");
      expect(out.text).toContain("TOUCHED");
      expect(out.text).not.toContain("no job control");
      expect(sb.hostHas(outside)).toBe(false);
      expect(sb.hostHas(join(sb.root, "here.txt"))).toBe(true);
      proc.terminal!.write("exit\n");
      expect(await proc.exited).toBe(0);
    } finally {
      proc.kill();
      proc.terminal?.close();
    }
  });

  test("through bun-pty, which merges the server's own environment, the program still sees exactly the spec's", async () => {
    await using sb = await Sandbox.create(mode);
    const cmd = sb.plan(sb.spec({ argv: ["/usr/bin/env"] }));
    const out = new Transcript();
    const pty = spawnPty(cmd.argv[0]!, cmd.argv.slice(1), { env: cmd.env, cwd: cmd.cwd, cols: 80, rows: 24, name: "xterm" });
    const exited = new Promise<number>((resolve) => pty.onExit((e) => resolve(e.exitCode)));
    pty.onData((d) => out.push(d));
    expect(await exited).toBe(0);
    await out.waitFor("HATCH_VISIBLE=yes");
    const names = out.text.replaceAll("\r", "").trim().split("\n").map((line) => line.split("=")[0]).sort();
    expect(names).toEqual(Object.keys(sb.spec().env).sort());
  });
});
