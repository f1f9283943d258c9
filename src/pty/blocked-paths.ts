/**
 * The path half of the blocklist: credential files a terminal must not name,
 * the directories whose recursive deletion is catastrophic, and the small
 * path arithmetic both need. Pure string work; nothing touches the disk.
 */

/** A `.env` file: `.env`, `.envrc`, `.env.local`; templates (`.env.example`) are harmless. */
const ENV_FILE = /(^|\/)(\.envrc|\.env|\.env\.(?!(example|sample|template|dist|defaults)$)[^/]+)$/;

/**
 * Credential locations, each with the reason the user is shown. Matched on a
 * normalized path anywhere in a word, so `~/.ssh`, `$HOME/.ssh`,
 * `/home/ada/.ssh/id_ed25519` and, from the home directory, `.ssh/config` all
 * count. The price: `ssh -i ~/.ssh/key host` is refused too (plain `ssh host`
 * finds its keys by itself).
 */
export const CREDENTIAL_PATHS: readonly (readonly [RegExp, string])[] = [
  [/(^|\/)\.ssh(\/|$)/, "access to SSH keys (~/.ssh)"],
  [/^\/etc\/g?shadow-?$|^\/etc\/master\.passwd$/, "access to the password hashes (/etc/shadow)"],
  [/^\/etc\/ssh\/ssh_host_[^/]*_key$/, "access to the SSH host keys"],
  [/(^|\/)\.aws(\/|$)/, "access to AWS credentials (~/.aws)"],
  [/(^|\/)\.azure(\/|$)/, "access to Azure credentials (~/.azure)"],
  [/(^|\/)\.config\/gcloud(\/|$)/, "access to Google Cloud credentials (~/.config/gcloud)"],
  [/(^|\/)\.docker(\/config\.json)?$/, "access to Docker registry credentials (~/.docker/config.json)"],
  [/(^|\/)\.kube(\/|$)/, "access to Kubernetes credentials (~/.kube)"],
  [/(^|\/)[._]netrc$/, "access to stored logins (~/.netrc)"],
  [/(^|\/)\.git-credentials$|(^|\/)\.config\/git\/credentials$/, "access to stored git credentials"],
  [/(^|\/)\.config\/gh(\/|$)/, "access to GitHub CLI credentials (~/.config/gh)"],
  [/(^|\/)(\.npmrc|\.yarnrc\.yml|\.pypirc)$|(^|\/)\.cargo\/credentials(\.toml)?$/, "access to a package registry token file"],
  [/(^|\/)\.gnupg(\/|$)/, "access to GnuPG keys (~/.gnupg)"],
  [/(^|\/)\.vault-token$|(^|\/)\.terraform\.d\/credentials\.tfrc\.json$/, "access to a stored access token"],
  [/^\/proc\/[^/]+\/(task\/[^/]+\/)?environ$/, "read of a process environment (/proc/*/environ)"],
  [ENV_FILE, "access to a .env file"],
];

/** Top-level directories whose recursive deletion wrecks the machine (Linux and macOS). */
const SYSTEM_DIRS = new Set([
  "bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "opt", "proc", "root", "run", "sbin", "snap", "srv", "sys", "usr", "var",
  "Applications", "Library", "System", "Users", "Volumes", "private",
]);

/** `~`, `~alice`, `$HOME`, `${HOME}` at the start of a word. */
const HOME_PREFIX = /^(~[A-Za-z0-9._-]*|\$HOME|\$\{HOME\})(?=\/|$)/;

/** A last component that matches everything in its directory: `*`, `.*`, `**`. */
const MATCH_ALL_GLOB = /^\.?\*+$/;

/**
 * Collapse `//`, drop `.`, resolve `..` (never above `/`), drop a trailing
 * slash. A relative path stays relative, and `..` at its start is kept.
 *
 * @example
 * normalizePath("/srv//hatch/./data/../data/") // => "/srv/hatch/data"
 */
export function normalizePath(path: string): string {
  const absolute = path.startsWith("/");
  const parts: string[] = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === ".." && (absolute || (parts.length > 0 && parts.at(-1) !== ".."))) parts.pop();
    else parts.push(part);
  }
  const joined = parts.join("/");
  return absolute ? "/" + joined : joined || ".";
}

/** True when `path` is `zone` or inside it (both normalized, absolute). */
export function isUnder(path: string, zone: string): boolean {
  return path === zone || path.startsWith(zone + "/");
}

/**
 * The path-like pieces of a word: `--config=~/.aws/credentials` gives
 * `--config` and `~/.aws/credentials`; `host:~/.ssh/id_rsa` gives `host` and
 * `~/.ssh/id_rsa`; curl's `@/etc/shadow` (a file to send) gives `/etc/shadow`;
 * a short option with its value glued on, `-C/srv/data` or `-d@.env`, gives
 * the value too. A piece holding white space is also kept whole, as a quoted
 * or escaped path with a space in it (`'/srv/hatch data/secret.key'`) is one.
 */
export function pathTokens(word: string): string[] {
  const tokens = word.split(/[\s=:,;()<>|&'"`@]+/).filter(Boolean);
  const spaced = word.split(/[=:,;()<>|&'"`@]+/).filter((piece) => /\S\s+\S/.test(piece));
  const glued = /^-[A-Za-z]([/.~$@].*)$/.exec(word);
  return [...tokens, ...spaced, ...(glued ? pathTokens(glued[1]!) : [])];
}

/** Where a line runs: the session's home, and the shell's working directory when known. */
export interface LinePlace {
  home?: string;
  cwd?: string;
}

/**
 * `word` as a path from `cwd`: a relative word is joined to it; an absolute
 * one, or one starting with `~` or `$` (the shell expands those itself), is
 * returned as it is, and so is every word when `cwd` is unknown.
 *
 * @example
 * fromDirectory("usr", "/") // => "/usr"
 */
export function fromDirectory(word: string, cwd?: string): string {
  return cwd && word && !/^[/~$]/.test(word) ? `${cwd}/${word}` : word;
}

/**
 * What a recursive delete (or chmod -R) of `target` would destroy, when that
 * is the whole machine or a home directory: "/", "/usr", "the home directory".
 * Null for anything narrower. A relative target counts from `place.cwd`.
 *
 * @example
 * dangerousTarget("/usr/*") // => "/usr"
 * dangerousTarget("./build") // => null
 * dangerousTarget("*", { cwd: "/" }) // => "/"
 */
export function dangerousTarget(word: string, place: LinePlace = {}): string | null {
  const { home } = place;
  const target = fromDirectory(word, place.cwd);
  const homePrefix = HOME_PREFIX.exec(target);
  if (homePrefix) {
    const below = withoutMatchAll(normalizePath("/" + target.slice(homePrefix[0].length)));
    return below === "/" ? "the home directory" : null;
  }
  if (!target.startsWith("/")) return null;
  const path = withoutMatchAll(normalizePath(target));
  if (path === "/") return "/";
  if (home && path === normalizePath(home)) return "the home directory";
  const top = path.slice(1);
  return !top.includes("/") && SYSTEM_DIRS.has(top) ? path : null;
}

/** `/usr/*` deletes as much of `/usr` as `/usr` does. */
function withoutMatchAll(path: string): string {
  const parts = path.split("/");
  while (parts.length > 1 && MATCH_ALL_GLOB.test(parts.at(-1)!)) parts.pop();
  return parts.join("/") || "/";
}
