import { accessSync, constants, statSync } from "node:fs";

/**
 * Which program a spawn runs. The order is the specification's "Shell
 * selection", made precise:
 *
 * 1. `HATCH_SHELL`, only when the named binary exists (an absolute path, or a
 *    bare name found on `PATH`); otherwise it is ignored, never trusted blind.
 * 2. On Windows: `COMSPEC` when it exists, else bare `cmd.exe` for the OS to
 *    find. The POSIX steps never run there.
 * 3. Interactive terminal: the operator's `$SHELL` when it exists, then step 4.
 *    Agent runner: the bash chain of step 4, then the sh chain, then `$SHELL`,
 *    then bare `sh`. "Consults $SHELL last" is read literally: the runner
 *    executes commands written for bash, and a POSIX sh reads them more
 *    faithfully than an arbitrary login shell (fish, nushell, csh would not),
 *    so `$SHELL` is only the last real candidate before giving up to the OS.
 * 4. `/bin/bash`, `/usr/bin/bash`, `bash` on `PATH`; `/bin/sh`, `/usr/bin/sh`,
 *    `sh` on `PATH`; finally bare `sh` left to the OS.
 *
 * Only the filesystem is consulted (through `deps.isFile`); no helper process
 * (`which`, `command -v`) is spawned, so selection is cheap and cannot hang.
 *
 * @example
 * selectShell("interactive", defaultShellDeps({ ...process.env, HATCH_SHELL: config.shell ?? undefined }))
 * // => "/bin/zsh" when SHELL=/bin/zsh exists, else "/bin/bash", ...
 */
export function selectShell(purpose: ShellPurpose, deps: ShellDeps): string {
  const windows = deps.platform === "win32";
  const env = (name: string) => readEnv(deps.env, name, windows);
  const find = (name: string | undefined) => (name ? resolveBinary(name, env("PATH"), windows, deps.isFile, env("PATHEXT")) : null);

  const override = find(env("HATCH_SHELL"));
  if (override) return override;

  if (windows) {
    const comspec = env("COMSPEC");
    return comspec && deps.isFile(comspec) ? comspec : WINDOWS_FALLBACK_SHELL;
  }

  const bash = () => firstFile(BASH_PATHS, deps.isFile) ?? find("bash");
  const sh = () => firstFile(SH_PATHS, deps.isFile) ?? find("sh");
  const login = () => {
    const shell = find(env("SHELL"));
    // A service account's "shell" refuses logins: run as one, hatch would start sessions that exit at once.
    return shell && !NOT_A_SHELL.has(shell.slice(shell.lastIndexOf("/") + 1)) ? shell : null;
  };
  const order = purpose === "interactive" ? [login, bash, sh] : [bash, sh, login];
  for (const candidate of order) {
    const found = candidate();
    if (found) return found;
  }
  return POSIX_FALLBACK_SHELL;
}

/** Who the shell is for: the browser terminal, or the agent's command runner. */
export type ShellPurpose = "interactive" | "runner";

/** What `selectShell` may look at; injected so every branch is testable. */
export interface ShellDeps {
  /** `process.platform` of the host that will spawn the shell. */
  platform: string;
  /** Environment holding `HATCH_SHELL`, `SHELL`, `PATH`, `COMSPEC`, `PATHEXT`. */
  env: Record<string, string | undefined>;
  /** True when `path` is an existing file this process may execute. */
  isFile(path: string): boolean;
}

/** Well-known bash locations, tried before the PATH probe (Debian, Alpine, macOS, Fedora). */
const BASH_PATHS = ["/bin/bash", "/usr/bin/bash"];
/** Well-known sh locations, tried before the PATH probe. */
const SH_PATHS = ["/bin/sh", "/usr/bin/sh"];
/** What /etc/passwd names as the shell of an account nobody may log in to. */
const NOT_A_SHELL = new Set(["nologin", "false", "true"]);
/** Last resort on POSIX: let execvp find it, or fail with the OS's own error. */
const POSIX_FALLBACK_SHELL = "sh";
/** Last resort on Windows when COMSPEC is unset or missing. */
const WINDOWS_FALLBACK_SHELL = "cmd.exe";
/** Windows' own default when PATHEXT is unset. */
const DEFAULT_PATHEXT = ".COM;.EXE;.BAT;.CMD";

function firstFile(paths: string[], isFile: (path: string) => boolean): string | null {
  return paths.find(isFile) ?? null;
}

/** Windows variable names are case-insensitive (`ComSpec`, `Path`); POSIX ones are not. */
function readEnv(env: Record<string, string | undefined>, name: string, windows: boolean): string | undefined {
  const exact = env[name]?.trim();
  if (exact || !windows) return exact || undefined;
  const key = Object.keys(env).find((k) => k.toUpperCase() === name);
  return key ? env[key]?.trim() || undefined : undefined;
}

/**
 * An absolute path is checked as is; a bare name is looked up on PATH. A
 * relative path with a separator ("bin/zsh") is refused: it would resolve
 * against the session's working directory, not the server's.
 */
function resolveBinary(
  name: string,
  path: string | undefined,
  windows: boolean,
  isFile: (path: string) => boolean,
  pathext: string | undefined,
): string | null {
  if (isAbsolute(name, windows)) return isFile(name) ? name : null;
  if ((windows ? /[\\/]/ : /\//).test(name)) return null;
  const separator = windows ? "\\" : "/";
  // Windows runs "pwsh" as "pwsh.exe": try each PATHEXT suffix unless one is given.
  const extensions = windows && !/\.[^.\\/]+$/.test(name) ? (pathext || DEFAULT_PATHEXT).split(";").filter(Boolean) : [""];
  for (const dir of (path ?? "").split(windows ? ";" : ":")) {
    // An empty or relative PATH entry means "the current directory": a planted
    // ./bash in a project must never become the shell.
    if (!isAbsolute(dir, windows)) continue;
    const base = dir.endsWith(separator) ? dir : dir + separator;
    for (const ext of extensions) {
      const candidate = base + name + ext.toLowerCase();
      if (isFile(candidate)) return candidate;
    }
  }
  return null;
}

function isAbsolute(path: string, windows: boolean): boolean {
  return windows ? /^([a-zA-Z]:[\\/]|\\\\)/.test(path) : path.startsWith("/");
}

/**
 * The real filesystem behind `selectShell`: a path counts when it is a regular
 * file (symlinks followed, as `/bin/sh -> dash` is) that this process may
 * execute. The environment is passed in because only `src/config.ts` reads
 * `process.env`; callers hand over what they were given.
 *
 * @example
 * const shell = selectShell("runner", defaultShellDeps(env));
 */
export function defaultShellDeps(env: Record<string, string | undefined>, platform: string = process.platform): ShellDeps {
  return {
    platform,
    env,
    isFile(path) {
      try {
        if (!statSync(path, { throwIfNoEntry: false })?.isFile()) return false;
        accessSync(path, constants.X_OK);
        return true;
      } catch {
        return false;
      }
    },
  };
}
