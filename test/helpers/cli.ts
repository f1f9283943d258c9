import { adminCommands } from "../../src/cli/admin-commands.ts";
import type { Command } from "../../src/cli/command.ts";
import { runCli } from "../../src/cli/run-cli.ts";
import { tempDir, type TempDir } from "./temp-dir.ts";

/** A fresh, empty data dir for CLI runs, removed at the end of its `using` scope. */
export function tempDataDir(): TempDir {
  return tempDir("cli");
}

/** What one CLI run printed and returned. */
export interface CliResult {
  code: number;
  out: string;
  err: string;
  json<T = any>(): T;
}

/** Run the hatch CLI in-process against a data dir, capturing its output; `stdin` is what it reads there. */
export async function hatchCli(dataDir: string, argv: string[], commands: Command[] = adminCommands, stdin = ""): Promise<CliResult> {
  let out = "";
  let err = "";
  const code = await runCli(argv, commands, {
    env: { HATCH_DATA_DIR: dataDir },
    stdin: async () => stdin,
    io: { out: (t) => (out += t + "\n"), err: (t) => (err += t + "\n") },
  });
  return { code, out, err, json: () => JSON.parse(out) };
}

/** Run the real `bun src/cli.ts` as a child process, with `env` added to its environment and `stdin` piped in. */
export async function hatchCliProcess(dataDir: string, argv: string[], env: Record<string, string> = {}, stdin = ""): Promise<{ code: number; out: string; err: string }> {
  const child = Bun.spawn([process.execPath, "src/cli.ts", ...argv], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HATCH_DATA_DIR: dataDir, ...env },
    stdin: new TextEncoder().encode(stdin),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { code, out, err };
}
