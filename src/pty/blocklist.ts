import { isSensitiveEnvName } from "./environment.ts";
import { CREDENTIAL_PATHS, dangerousTarget, fromDirectory, isUnder, normalizePath, pathTokens, type LinePlace } from "./blocked-paths.ts";
import { baseName, commandArgv, parseShellLine, pastOptions, type SimpleCommand } from "./shell-words.ts";

/**
 * The line blocklist of the input guard: catastrophic commands, platform-zone
 * and credential-file paths, and secret-name probes. It is a best-effort
 * pattern filter, not a sandbox: it reads the words a line names, never what a
 * variable, alias or script would make of them. It aims to stop the obvious
 * slip ("rm -rf / tmp") and the casual probe, and never an ordinary command.
 */

/** What the blocklist says about one line. */
export type LineVerdict = { blocked: false } | { blocked: true; reason: string };

/** Per-session knowledge the blocklist needs. */
export interface BlocklistOptions {
  /** Absolute paths no terminal may name, e.g. the data directory. "/" and "" are ignored. */
  protectedPaths?: string[];
  /** Absolute paths inside a protected one that this session may name: its own scratch directory. */
  allowedPaths?: string[];
  /** The session's home directory, so `~/...` can be compared with protected paths. */
  home?: string;
  /**
   * The shell's working directory as a line is checked (null when unknown),
   * so relative paths name what they name to the shell: `rm -rf usr` from `/`.
   */
  cwd?(): string | null;
}

const ALLOWED: LineVerdict = { blocked: false };
/** The session user's own home at the start of a word (`~alice` is someone else's). */
const OWN_HOME = /^(~|\$HOME|\$\{HOME\})(?=\/|$)/;
/** `bash -c "eval '$(...)'"` nests; past this depth the line is judged as it stands. */
const MAX_NESTING = 4;
/** The longest path Linux takes (PATH_MAX): a line whose `cd`s go deeper is refused as too complex, not judged from a directory it cannot be in. */
const MAX_TRACKED_CWD = 4096;
/**
 * Characters of path the screen builds for one line at most: each path-like
 * piece of each word joined to the directory its command runs in. The screen
 * runs on the event loop every session shares, and `cd a;cd a;…` (or one word
 * `a,a,a,…` after a deep `cd`) makes that work grow with the square of the
 * line: past this, the line is refused rather than judged.
 */
const MAX_SCREEN_WORK = 2 * 1024 * 1024;
/** Why a line whose screening would cost more than it may is refused. */
const TOO_COMPLEX = "line too complex to screen";

/** How far a fork-bomb name or body is looked for around a "{"; real ones are a few characters. */
const FUNCTION_WINDOW = 128;
/** Characters that cannot be part of a function name. */
const NOT_NAME = /[\s(){}|&;<>]/;
const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish"]);
const MKFS = /^(mkfs(\.\w+)?|mke2fs|mkswap|mkdosfs|mkntfs|mkexfatfs|newfs(_\w+)?)$/;
const POWER = new Set(["shutdown", "reboot", "halt", "poweroff"]);
const SYSTEMCTL_POWER = /^(poweroff|reboot|soft-reboot|halt|kexec|suspend|hibernate|hybrid-sleep|suspend-then-hibernate|rescue|emergency)$/;
const POWER_TARGET = /^(poweroff|reboot|halt|kexec|rescue|emergency|shutdown)\.target$/;
/** Whole disks and partitions; /dev/null, /dev/tty and friends stay writable. */
const BLOCK_DEVICE = /^\/dev\/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk|rdisk\d|md\d|dm-\d|mapper\/|nbd\d|root$)/;
/** Programs that print their arguments or stdin: expanding a secret into them reveals it. */
const PRINTERS = new Set(["echo", "printf", "print", "cat", "tee", "base64", "xxd", "od", "hexdump", "rev", "logger"]);
/** Programs whose arguments are only text to print. */
const TEXT_PRINTERS = new Set(["echo", "printf", "print"]);
/** Programs that dump the whole environment. */
const ENV_DUMPERS = new Set(["env", "printenv", "set", "export", "declare", "typeset", "compgen"]);
/** Programs that filter a dump down to the interesting lines. */
const FILTERS = new Set(["grep", "egrep", "fgrep", "rg", "ag", "ack", "awk", "gawk", "mawk", "sed", "findstr"]);

/**
 * Decides whether a completed line may run.
 *
 * @example
 * const blocklist = new Blocklist({ protectedPaths: [config.dataDir], allowedPaths: [scratch.path], home });
 * blocklist.checkLine("sudo rm -rf --no-preserve-root /") // => { blocked: true, reason: "recursive delete of /" }
 */
export class Blocklist {
  readonly #protected: string[];
  readonly #allowed: string[];
  readonly #home: string | undefined;
  readonly #cwd: () => string | null;

  constructor(options: BlocklistOptions = {}) {
    const clean = (paths: string[] = []) => paths.map((p) => normalizePath(p)).filter((p) => p.startsWith("/") && p !== "/");
    this.#protected = clean(options.protectedPaths);
    this.#allowed = clean(options.allowedPaths);
    this.#home = options.home ? normalizePath(options.home) : undefined;
    const cwd = options.cwd;
    this.#cwd = cwd ? () => cwd.call(options) : () => null;
  }

  /** Check one line as the shell would receive it (without its terminator). */
  checkLine(line: string): LineVerdict {
    const cwd = this.#cwd();
    const reason = this.#check(line, 0, cwd?.startsWith("/") ? normalizePath(cwd) : undefined, { left: MAX_SCREEN_WORK });
    return reason ? { blocked: true, reason } : ALLOWED;
  }

  #check(line: string, depth: number, cwd: string | undefined, work: ScreenWork): string | null {
    if (depth > MAX_NESTING) return null;
    const bomb = forkBomb(line);
    if (bomb) return bomb;
    const { commands, substitutions } = parseShellLine(line);
    // Each command's argv, wrappers removed, once: every check below reads it.
    const argvs = commands.map((command) => commandArgv(command.words));
    const places = this.#places(argvs, cwd, work);
    const pieces = places && piecesWithin(commands, argvs, places, work);
    if (!places || !pieces) return TOO_COMPLEX;
    for (const [i, command] of commands.entries()) {
      const reason = this.#command(command, argvs[i]!, depth, places[i]!, work);
      if (reason) return reason;
    }
    const reason = environmentDump(commands, argvs) ?? this.#paths(pieces, argvs, places);
    if (reason) return reason;
    for (const inner of substitutions) {
      const nested = this.#check(inner, depth + 1, cwd, work);
      if (nested) return nested;
    }
    return null;
  }

  /**
   * Where each command of a line runs: a `cd` (or `pushd`) earlier in the
   * line moves the rest, as in `cd / && rm -rf usr`; after `cd -` the
   * directory is unknown. Null when the line costs more to follow than
   * `work` has left, or goes deeper than any directory can be.
   */
  #places(argvs: string[][], cwd: string | undefined, work: ScreenWork): LinePlace[] | null {
    const home = this.#home;
    const places: LinePlace[] = [];
    for (const [program, ...args] of argvs) {
      places.push({ home, cwd });
      if (program !== "cd" && program !== "pushd") continue;
      const target = args.find((a) => !a.startsWith("-") || a === "-");
      const path = target === undefined ? home : target === "-" ? undefined : this.#expandHome(fromDirectory(target, cwd));
      work.left -= path?.length ?? 0;
      cwd = path?.startsWith("/") ? normalizePath(path) : undefined;
      if (work.left < 0 || (cwd?.length ?? 0) > MAX_TRACKED_CWD) return null;
    }
    return places;
  }

  #expandHome(path: string): string {
    return this.#home ? path.replace(OWN_HOME, this.#home) : path;
  }

  #command(command: SimpleCommand, argv: string[], depth: number, place: LinePlace, work: ScreenWork): string | null {
    const [program = "", ...args] = argv;
    // `PROMPT_COMMAND='…'`, alone or before a command, and `export PROMPT_COMMAND='…'` / `declare …`.
    const assigned = command.words.map((word) => CODE_VARIABLES.exec(word)?.[2]).filter((value) => value !== undefined);
    for (const script of [nestedScript(program, args), envSplitString(command.words), ...assigned]) {
      if (script === null) continue;
      const nested = this.#check(script, depth + 1, place.cwd, work);
      if (nested) return nested;
    }
    return (
      this.#catastrophic(program, args, place) ??
      deviceRedirect(command) ??
      secretProbe(program, args, command.expansions)
    );
  }

  #catastrophic(program: string, args: string[], place: LinePlace): string | null {
    if (program === "rm") return recursiveDelete(args, place);
    if (program === "find") return findDelete(args, place);
    if (program === "chmod" || program === "chown" || program === "chgrp") return recursiveOwnership(program, args, place);
    if (MKFS.test(program)) return `filesystem creation (${program})`;
    if (program === "wipefs" && args.some((a) => /^(-[a-z]*a[a-z]*|--all)$/.test(a))) return "wipe of filesystem signatures";
    if (program === "dd") {
      const target = args.find((a) => a.startsWith("of="))?.slice(3);
      if (target && BLOCK_DEVICE.test(normalizePath(target))) return `raw write to block device ${target}`;
    }
    if (["tee", "cp", "shred", "blkdiscard"].includes(program)) {
      const device = args.find((a) => BLOCK_DEVICE.test(normalizePath(a)));
      if (device && (program !== "cp" || device === args.at(-1))) return `raw write to block device ${device}`;
    }
    return power(program, args) ?? killEverything(program, args) ?? keyBinding(program, args);
  }

  #paths(pieces: WordPieces[][], argvs: string[][], places: LinePlace[]): string | null {
    // What echo and printf print is text, not a path, even where it reads as one from the directory.
    const paths = pieces.flatMap((words, i) => {
      const cwd = TEXT_PRINTERS.has(argvs[i]![0] ?? "") ? undefined : places[i]!.cwd;
      return words.flatMap(({ tokens }) => tokens).map((token) => fromDirectory(token, cwd));
    });
    for (const token of paths) {
      const path = normalizePath(this.#expandHome(token));
      for (const [pattern, reason] of CREDENTIAL_PATHS) if (pattern.test(path)) return reason;
      if (this.#allowed.some((allowed) => isUnder(path, allowed))) continue;
      if (this.#protected.some((zone) => isUnder(path, zone))) return "access to a protected hatch directory";
    }
    return null;
  }
}

/** What screening one line may still cost, in characters of path built; shared by the scripts nested in it. */
interface ScreenWork {
  left: number;
}

/** A word (or redirect target) of a command and its path-like pieces (`pathTokens`). */
interface WordPieces {
  word: string;
  tokens: string[];
}

/** Programs whose arguments the recursive-delete checks join, whole, to the directory. */
const WHOLE_WORD_TARGETS = new Set(["rm", "find", "chmod", "chown", "chgrp"]);

/**
 * Each command's words and redirect targets with their path-like pieces,
 * split once for `#paths`, charging `work` for the paths the checks build
 * from them: each piece (one word `a,a,a` is three) joined to its command's
 * directory, and for the recursive-delete checks each whole argument too.
 * Null as soon as that is more than is left.
 */
function piecesWithin(commands: SimpleCommand[], argvs: string[][], places: LinePlace[], work: ScreenWork): WordPieces[][] | null {
  const pieces: WordPieces[][] = [];
  for (const [i, command] of commands.entries()) {
    const directory = (places[i]!.cwd?.length ?? 0) + 1;
    const wholeWords = WHOLE_WORD_TARGETS.has(argvs[i]![0] ?? "");
    const words: WordPieces[] = [];
    for (const word of [...command.words, ...command.redirects.map((r) => r.target)]) {
      const tokens = pathTokens(word);
      for (const token of tokens) work.left -= directory + token.length;
      if (wholeWords) work.left -= directory + word.length;
      if (work.left < 0) return null;
      words.push({ word, tokens });
    }
    pieces.push(words);
  }
  return pieces;
}

/**
 * The script of `bash -c '...'` (or `bash -c -- '...'`), `su -c '...'`,
 * `eval ...`, `trap '...' SIGNAL`, `alias name='...'`, or of a program that
 * runs its arguments as a command line (`watch`, `script -c`, `flock`, `sg`,
 * `runuser -u`), or null: text run as a command line of its own.
 */
function nestedScript(program: string, args: string[]): string | null {
  if (program === "eval") return args.join(" ");
  const runner = SCRIPT_RUNNERS[program];
  if (runner) return runner(args);
  if (program === "trap") return args.find((a) => !a.startsWith("-")) ?? null;
  // `complete -C 'cmd' name` runs cmd at each Tab on that name, with no Enter to screen it.
  if (program === "complete" || program === "compgen") return args.find((_, i) => args[i - 1] === "-C") ?? null;
  if (program === "alias") return args.map((a) => /^[^=]+=(.*)$/s.exec(a)?.[1]).filter((body) => body !== undefined).join("\n") || null;
  if (!SHELLS.has(program)) return null;
  const flag = args.findIndex((a) => /^-[a-zA-Z]*c[a-zA-Z]*$/.test(a));
  if (flag < 0) return null;
  // `bash -c -- 'cmd'`: the -- ends the options, and the script is the word after it.
  const script = args[flag + 1] === "--" ? args[flag + 2] : args[flag + 1];
  return script ?? null;
}

/**
 * Programs that run (part of) their arguments as a command: what they run, as
 * a line the blocklist can check, or null when they run nothing.
 */
const SCRIPT_RUNNERS: Record<string, (args: string[]) => string | null> = {
  // watch hands its operands, joined by spaces, to `sh -c`; with -x it execs them as they are.
  watch: (args) => {
    const at = pastOptions(args, 0, ["-n", "--interval", "-q", "--equexit"]);
    const exec = args.slice(0, at).some((a) => a === "--exec" || /^-[a-zA-Z]*x/.test(a));
    return at < args.length ? (exec ? asLine(args.slice(at)) : args.slice(at).join(" ")) : null;
  },
  // script [options] [file]: only -c runs anything, glued (`-qc cmd`, `-c'cmd'`) or not.
  script: (args) => {
    for (let i = 0; i < args.length; i++) {
      const arg = args[i]!;
      if (arg === "--") break;
      if (arg.startsWith("--command=")) return arg.slice("--command=".length);
      if (arg === "--command") return args[i + 1] ?? null;
      const short = /^-[aefqk]*c(.*)$/s.exec(arg);
      if (short) return short[1] || (args[i + 1] ?? null);
    }
    return null;
  },
  // flock [options] file command [args], or flock [options] file -c 'command'.
  flock: (args) => {
    const at = pastOptions(args, 0, ["-w", "--timeout", "--wait", "-E", "--conflict-exit-code"]);
    const rest = args.slice(at + 1);
    if (rest[0] === "-c" || rest[0] === "--command") return rest[1] ?? null;
    return rest.length ? asLine(rest) : null;
  },
  // sg [-] group [-c] 'command': sg hands the command to `sh -c`.
  sg: (args) => {
    const rest = args.slice(args[0] === "-" ? 2 : 1);
    return rest[0] === "-c" ? (rest[1] ?? null) : rest.length ? rest.join(" ") : null;
  },
  // runuser -u user [--] command [args] execs the command; without -u it is su's form.
  runuser: (args) => {
    const valued = ["-u", "--user", "-g", "--group", "-G", "--supp-group", "-s", "--shell", "-w", "--whitelist-environment"];
    const at = pastOptions(args, 0, valued);
    const named = args.slice(0, at).some((a) => a === "-u" || a === "--user" || a.startsWith("--user="));
    return named ? (at < args.length ? asLine(args.slice(at)) : null) : suScript(args);
  },
  su: suScript,
};

/** The script of `su [options] [user] -c 'command'`. */
function suScript(args: string[]): string | null {
  const flag = args.findIndex((a) => a === "-c" || a === "--command");
  if (flag >= 0) return args[flag + 1] ?? null;
  return args.find((a) => a.startsWith("--command="))?.slice("--command=".length) ?? null;
}

/**
 * Words a program will exec, as a line that parses back to the same words.
 * Double quotes keep `$NAME` an expansion, as it was in the line typed.
 */
function asLine(words: string[]): string {
  return words.map((word) => `"${word.replace(/["\\`]/g, "\\$&")}"`).join(" ");
}

/** The command line of `env -S '...'` (`--split-string`), which env splits into words and runs; null without one. */
function envSplitString(words: string[]): string | null {
  const env = words.findIndex((word) => baseName(word) === "env");
  if (env < 0) return null;
  for (let i = env + 1; i < words.length && words[i]!.startsWith("-"); i++) {
    const word = words[i]!;
    if (word === "-S" || word === "--split-string") return words[i + 1] ?? null;
    if (word.startsWith("--split-string=")) return word.slice("--split-string=".length);
    if (/^-[^-]*S./.test(word)) return word.slice(word.indexOf("S") + 1);
  }
  return null;
}

/**
 * Shell variables whose value the shell runs as a command line later, with
 * no Enter to screen it: `PROMPT_COMMAND` at each prompt, `PS0`-`PS4` when
 * shown, `MAILPATH`'s messages when a mail file changes (they expand `$(…)`).
 * An assignment to one is judged by its value.
 */
const CODE_VARIABLES = /^(PROMPT_COMMAND|PS[0-4]|MAILPATH)\+?=([\s\S]*)$/;

function recursiveDelete(args: string[], place: LinePlace): string | null {
  let recursive = false;
  let noPreserveRoot = false;
  const targets: string[] = [];
  let options = true;
  for (const arg of args) {
    if (options && arg === "--") options = false;
    else if (options && arg.startsWith("--")) {
      // GNU getopt accepts any unambiguous prefix: --rec, --no-pres.
      if (arg.length >= 3 && "--recursive".startsWith(arg)) recursive = true;
      if (arg.length >= 4 && "--no-preserve-root".startsWith(arg)) noPreserveRoot = true;
    } else if (options && arg.startsWith("-") && arg.length > 1) {
      if (/[rR]/.test(arg)) recursive = true;
    } else targets.push(arg);
  }
  if (!recursive) return null;
  for (const target of targets) {
    const zone = dangerousTarget(target, place);
    if (zone) return `recursive delete of ${zone}`;
  }
  return noPreserveRoot ? "recursive delete with --no-preserve-root" : null;
}

function findDelete(args: string[], place: LinePlace): string | null {
  const paths = args.slice(leadingFindOptions(args));
  const firstExpression = paths.findIndex((a) => /^[-(!]/.test(a));
  const named = firstExpression === -1 ? paths : paths.slice(0, firstExpression);
  // With no path named, find starts at ".".
  const roots = named.length ? named : ["."];
  const deletes = args.includes("-delete") || args.some((a, i) => /^-(exec|execdir|ok)$/.test(a) && baseName(args[i + 1] ?? "") === "rm");
  if (!deletes) return null;
  const zone = roots.map((root) => dangerousTarget(root, place)).find(Boolean);
  return zone ? `recursive delete of ${zone}` : null;
}

/** How many of `args` are find's options before its paths: `-H`, `-L`, `-P`, `-O3`, `-D tree`. */
function leadingFindOptions(args: string[]): number {
  let at = 0;
  while (at < args.length) {
    const option = args[at]!;
    if (option === "-D") at += 2;
    else if (/^-([HLP]+|O\d*)$/.test(option)) at++;
    else break;
  }
  return at;
}

function recursiveOwnership(program: string, args: string[], place: LinePlace): string | null {
  const recursive = args.some((a) => /^-[a-zA-Z]*R[a-zA-Z]*$/.test(a) || a === "--recursive");
  const zone = recursive ? args.filter((a) => !a.startsWith("-")).map((a) => dangerousTarget(a, place)).find(Boolean) : null;
  return zone ? `recursive ${program} of ${zone}` : null;
}

function deviceRedirect(command: SimpleCommand): string | null {
  const write = command.redirects.find((r) => r.op.includes(">") && BLOCK_DEVICE.test(normalizePath(r.target)));
  return write ? `raw write to block device ${write.target}` : null;
}

function power(program: string, args: string[]): string | null {
  if (POWER.has(program)) return `${program} of the machine`;
  const operands = args.filter((a) => !a.startsWith("-"));
  if ((program === "init" || program === "telinit") && /^[016sS]$/.test(operands[0] ?? "")) return `runlevel change (${program} ${operands[0]})`;
  if (program === "systemctl" || program === "loginctl") {
    const [verb = "", unit = ""] = operands;
    if (SYSTEMCTL_POWER.test(verb)) return `${verb} of the machine`;
    if ((verb === "isolate" || verb === "start") && POWER_TARGET.test(unit)) return `${unit.replace(".target", "")} of the machine`;
  }
  return null;
}

/**
 * `bind` that ties a key to something: `-x` runs a command at the key, a
 * `"\C-t": accept-line` or a macro ending in `\n` runs the line with no Enter
 * for the screen to check, and `-f` reads such bindings from a file. Queries
 * (`-p`, `-l`, `-q`…), unbinding (`-r`, `-u`) and `set` variables are let through.
 */
function keyBinding(program: string, args: string[]): string | null {
  if (program !== "bind") return null;
  const refused = "a key binding (bind), which can run a line or a command the screen never checks";
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (/^-[a-zA-Z]+$/.test(arg)) {
      if (/[xf]/.test(arg)) return refused;
      // These take a value: a keymap, a function name, a key sequence.
      if (/[mqur]$/.test(arg)) i++;
    } else if (!/^\s*set\s/.test(arg)) return refused;
  }
  return null;
}

/** `kill -9 -1` signals every process the user owns, the server's own among them. */
function killEverything(program: string, args: string[]): string | null {
  if (program !== "kill") return null;
  // `kill -l 1` and `kill -L` list signal names: they signal nothing.
  if (/^(-[lL]|--list|--table)(=|$)/.test(args[0] ?? "")) return null;
  const pids: string[] = [];
  let signalSeen = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") {
      pids.push(...args.slice(i + 1));
      break;
    }
    // `-s KILL` and `-n 9` name the signal as `-9` does.
    if (arg === "-s" || arg === "-n") {
      i++;
      signalSeen = true;
    } else if (arg.startsWith("-") && !signalSeen) signalSeen = true;
    else pids.push(arg);
  }
  if (pids.includes("-1")) return "kill of every process";
  return pids.includes("1") ? "kill of the init process" : null;
}

function secretProbe(program: string, args: string[], expansions: string[]): string | null {
  if (program === "printenv" || program === "declare" || program === "typeset") {
    const name = args.find((a) => !a.startsWith("-") && isSensitiveEnvName(a));
    if (name) return `probe of secret variable ${name}`;
  }
  if (PRINTERS.has(program) || program === "printenv") {
    const name = expansions.find(isSensitiveEnvName);
    if (name) return `probe of secret variable ${name}`;
  }
  return null;
}

/** `env | grep -i token`, `set | grep KEY`: a dump filtered for secret-looking names. */
function environmentDump(commands: SimpleCommand[], argvs: string[][]): string | null {
  // `env` is also a wrapper (`env FOO=1 make`); with nothing left to run, it prints the environment.
  const bareEnv = (c: SimpleCommand, argv: string[]) => argv.length === 0 && c.words.some((w) => baseName(w) === "env");
  const dumps = argvs.some(
    (argv, i) => ENV_DUMPERS.has(argv[0] ?? "") || bareEnv(commands[i]!, argv) || argv.some((a) => /^\/proc\/[^/]+\/environ$/.test(a)),
  );
  if (!dumps) return null;
  const probes = argvs.some(
    ([program = "", ...args]) =>
      FILTERS.has(program) && args.some((a) => !a.startsWith("-") && a.split(/[^A-Za-z0-9_]+/).some((piece) => piece && isSensitiveEnvName(piece))),
  );
  return probes ? "probe of secret environment variables" : null;
}

/** `:(){ :|:& };:` and the same with any name, or `function f { f | f & }`. */
function forkBomb(line: string): string | null {
  // Each "{" is examined within a short window around it, by hand: a regex
  // over the whole line would backtrack quadratically on a long pasted line.
  for (let brace = line.indexOf("{"); brace !== -1; brace = line.indexOf("{", brace + 1)) {
    const name = functionNameBefore(line, brace);
    if (!name) continue;
    const window = line.slice(brace + 1, brace + 1 + FUNCTION_WINDOW);
    const close = window.indexOf("}");
    const body = close === -1 ? window : window.slice(0, close);
    const calls = body.split(/[\s|&;(){}]+/).filter((word) => word === name).length;
    if (calls >= 2 && /[|&]/.test(body)) return "fork bomb";
  }
  return /\bfork\s+while\s+fork\b|while\s*\(?\s*(true|1|True)\s*\)?\s*:?\s*os\.fork\(\)/.test(line) ? "fork bomb" : null;
}

/** The function a "{" opens: `name ()  {` or `function name {`; null when it opens something else. */
function functionNameBefore(line: string, brace: number): string | null {
  let i = spaceBefore(line, brace - 1);
  const parens = line[i] === ")";
  if (parens) {
    i = spaceBefore(line, i - 1);
    if (line[i] !== "(") return null;
    i = spaceBefore(line, i - 1);
  }
  const end = i + 1;
  while (i >= 0 && end - i <= FUNCTION_WINDOW && !NOT_NAME.test(line[i]!)) i--;
  const name = line.slice(i + 1, end);
  if (!name || parens) return name || null;
  const keywordEnd = spaceBefore(line, i);
  return keywordEnd < i && line.slice(keywordEnd - 7, keywordEnd + 1) === "function" ? name : null;
}

/** Index of the last non-blank character at or before `i` (-1 if none). */
function spaceBefore(line: string, i: number): number {
  while (i >= 0 && /\s/.test(line[i]!)) i--;
  return i;
}
