import { existsSync, writeSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ConfigError, loadConfig, type HatchConfig } from "../config.ts";
import { DATABASE_FILE, openDataDir } from "../db/index.ts";
import { HatchError, openPlatform, type Platform } from "../platform/index.ts";
import { UsageError, type Command, type CommandContext, type OptionSpec } from "./command.ts";
import { printableJson, printableLines, printableText } from "./printable.ts";

/** Where the CLI writes; injectable so tests can read it. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
}

/** Exit codes: 0 done, 1 the command failed, 2 bad arguments. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/** The code of a failure that is no HatchError, in --json output. */
const COMMAND_FAILED = "command_failed";
/** The code of a HATCH_* setting the CLI cannot use (exit 1). */
const INVALID_CONFIG = "invalid_config";
/** The code of arguments the CLI cannot use (exit 2), in --json output. */
const INVALID_ARGUMENTS = "invalid_arguments";

const SERVE_SUMMARY = "Run the service (web host and companion server)";
const SERVE_USAGE = `usage: hatch serve\n${SERVE_SUMMARY}, configured by the HATCH_* environment variables (see the README)`;

/** Run one CLI invocation against a command table; resolves to the exit code. */
export async function runCli(
  argv: string[],
  commands: Command[],
  options: { io?: CliIo; env?: Record<string, string | undefined>; stdin?: () => Promise<string>; serve?: (config: HatchConfig) => Promise<void> } = {},
): Promise<number> {
  // Written through, not buffered: a result that cannot be written (a full disk, a closed pipe) must fail the command.
  const io = options.io ?? { out: (t) => writeFully(1, t), err: (t) => writeFully(2, t) };
  if (argv[0] === "serve") {
    if (!options.serve) return EXIT.usage;
    if (argv.includes("--help")) {
      io.out(SERVE_USAGE);
      return EXIT.ok;
    }
    // Starting anyway would run the service on settings other than those the operator just typed.
    if (argv.length > 1) {
      io.err(`hatch: serve takes no arguments, its settings are HATCH_* variables: unexpected "${argv[1]}"\n\n${SERVE_USAGE}`);
      return EXIT.usage;
    }
    try {
      await options.serve(loadConfig(options.env));
    } catch (error) {
      // A bad setting or a busy port is the operator's to fix: one line saying which, not a stack trace.
      io.err(`hatch: cannot start: ${(error as Error).message}`);
      return EXIT.failed;
    }
    return EXIT.ok;
  }
  const command = findCommand(argv, commands);
  if (!command) {
    const text = usage(commands, argv.filter((a) => !a.startsWith("-")));
    // Asked for, it is the output (`hatch --help | less`), as a command's own --help is; otherwise it explains a refusal.
    if (argv.includes("--help")) {
      io.out(text);
      return EXIT.ok;
    }
    return refuseArguments(io, argv, "unknown command (hatch --help lists them)", text);
  }
  let parsed;
  const args = argv.slice(command.path.length);
  const known = { ...command.options, json: { type: "boolean" as const }, help: { type: "boolean" as const } };
  try {
    parsed = parseArgs({
      args,
      options: known,
      allowPositionals: true,
      strict: true,
      tokens: true,
    });
    if (parsed.values.help) {
      io.out(commandUsage(command));
      return EXIT.ok;
    }
    checkArguments(command, parsed.values, parsed.positionals, parsed.tokens);
  } catch (error) {
    // parseArgs quotes the word, and an unquoted password's rest (`--password Tr0ub4dor --and-more`) is one.
    const message = (error as { code?: string }).code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" ? unknownOption(args, Object.keys(known)) : (error as Error).message;
    return refuseArguments(io, argv, message, `hatch: ${message}\n\n${commandUsage(command)}`);
  }
  const opened: { current: { platform: Platform; close(): void } | null } = { current: null };
  let config: HatchConfig;
  try {
    config = loadConfig(options.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    io.err(parsed.values.json ? printableJson({ error: { code: INVALID_CONFIG, message: error.message } }) : `hatch: ${error.message}`);
    return EXIT.failed;
  }
  const ctx: CommandContext = {
    config,
    platform: async () => (opened.current ??= await openDataDirPlatform(config, command.readsOnly === true)).platform,
    readStdin: options.stdin ?? (async () => ""),
  };
  try {
    const result = await command.run(ctx, parsed.values as Record<string, string | boolean | undefined>, parsed.positionals);
    return printed(io, parsed.values.json || !command.human ? printableJson(result, 2) : printableLines(command.human(result))) ? EXIT.ok : EXIT.failed;
  } catch (error) {
    if (error instanceof UsageError) return refuseArguments(io, argv, error.message, `hatch: ${error.message}\n\n${commandUsage(command)}`);
    const { code, message } = error instanceof HatchError ? error : { code: COMMAND_FAILED, message: (error as Error)?.message ?? String(error) };
    // Not the operator's input (a locked or failing database, a race with another process): still one line they can act on.
    // Messages quote stored values too (a name, a label).
    io.err(parsed.values.json ? printableJson({ error: { code, message } }) : `hatch: ${printableText(message)}`);
    return EXIT.failed;
  } finally {
    opened.current?.close();
  }
}

async function openDataDirPlatform(config: HatchConfig, readsOnly: boolean) {
  // A mistyped HATCH_DATA_DIR, or `./data` from another directory than the server's, must not read as an empty log.
  if (readsOnly && !existsSync(join(config.dataDir, DATABASE_FILE))) {
    throw new HatchError("data_dir_empty", 500, `There is no hatch database in ${config.dataDir}: is HATCH_DATA_DIR the server's data dir?`);
  }
  let database;
  try {
    database = openDataDir(config.dataDir);
    const platform = await openPlatform({ db: database.db, secretKey: config.secretKey, dataDir: config.dataDir, sessionTtlMs: config.sessionTtlHours * 3600_000, takeNewKey: false });
    return { platform, close: database.close };
  } catch (error) {
    database?.close();
    // A data dir that is a file, a database that is not one, a truncated key: the operator's to fix, one line as `serve` says it.
    // openDataDir's own failures name the data dir already.
    const message = (error as Error).message;
    throw new HatchError("data_dir_unusable", 500, database ? `Cannot open the data dir ${config.dataDir}: ${message}` : message);
  }
}

/**
 * Print a command's result; false, said on stderr, when it cannot be written:
 * the command ran, and what it showed once (a new token) is lost.
 */
function printed(io: CliIo, text: string): boolean {
  try {
    io.out(text);
    return true;
  } catch (error) {
    const reason = (error as { code?: string }).code ?? (error as Error).message;
    try {
      io.err(`hatch: done, but its output could not be written (${reason}): what it showed once, such as a new token, is lost (rotate a token again)`);
    } catch {
      // stderr is gone too: the exit code is all that is left to say it.
    }
    return false;
  }
}

/**
 * Refuse the arguments with exit 2: the usage text, or under `--json` the one
 * `{"error":{"code","message"}}` line every other failure gives, so a script
 * reading stderr as JSON can tell a bad value from a crash.
 */
function refuseArguments(io: CliIo, argv: string[], message: string, text: string): number {
  const end = argv.indexOf("--");
  const json = argv.slice(0, end === -1 ? argv.length : end).includes("--json");
  io.err(json ? printableJson({ error: { code: INVALID_ARGUMENTS, message } }) : text);
  return EXIT.usage;
}

/** `text` and a line break on file descriptor `fd`, all of it, or a throw (ENOSPC, EPIPE, EBADF). */
function writeFully(fd: number, text: string): void {
  const bytes = Buffer.from(`${text}\n`);
  for (let at = 0; at < bytes.length; ) {
    try {
      at += writeSync(fd, bytes, at);
    } catch (error) {
      // A pipe its reader set non-blocking is full for now, not broken.
      if ((error as { code?: string }).code !== "EAGAIN") throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
    }
  }
}

/** parseArgs' unknown-option refusal, by position: the word itself may be half a secret. */
function unknownOption(args: string[], known: string[]): string {
  const end = args.indexOf("--");
  const at = args.findIndex((arg, i) => (end === -1 || i < end) && arg.startsWith("-") && arg !== "-" && !known.includes(arg.replace(/^--?/, "").split("=")[0]!));
  return `unknown option at position ${at + 1} (quote a value that holds spaces)`;
}

function findCommand(argv: string[], commands: Command[]): Command | undefined {
  return commands
    .filter((c) => c.path.every((part, i) => argv[i] === part))
    .sort((a, b) => b.path.length - a.path.length)[0];
}

function checkArguments(command: Command, values: Record<string, unknown>, positionals: string[], tokens: { kind: string; name?: string }[]): void {
  // parseArgs keeps the last of a repeated flag: a recalled line with a leftover `--project` would act on another project.
  const given = new Set<string>();
  for (const token of tokens) {
    if (token.kind !== "option" || token.name === undefined) continue;
    if (given.has(token.name)) throw new UsageError(`--${token.name} is given more than once`);
    given.add(token.name);
  }
  for (const [name, spec] of Object.entries(command.options)) {
    if (spec.required && (values[name] === undefined || values[name] === "")) throw new UsageError(`--${name} is required`);
  }
  for (const group of oneOfGroups(command)) {
    if (group.filter((name) => values[name] !== undefined).length !== 1) throw new UsageError(`give exactly one of ${group.map((name) => `--${name}`).join(", ")}`);
  }
  const expected = command.positionals ?? [];
  // Not echoed: it is most often the rest of an unquoted value, a password's second word among them.
  if (positionals.length > expected.length) throw new UsageError(`unexpected argument at position ${expected.length + 1} (quote a value that holds spaces)`);
  const missing = expected.find((p, i) => p.required && positionals[i] === undefined);
  if (missing) throw new UsageError(`${missing.name} is required`);
}

/** The option names of each `oneOf` group of a command, in the order they are declared. */
function oneOfGroups(command: Command): string[][] {
  const groups = new Map<string, string[]>();
  for (const [name, spec] of Object.entries(command.options)) {
    if (spec.oneOf !== undefined) groups.set(spec.oneOf, [...(groups.get(spec.oneOf) ?? []), name]);
  }
  return [...groups.values()];
}

function commandUsage(command: Command): string {
  const positional = (command.positionals ?? []).map((p) => (p.required ? p.name : `[${p.name}]`)).join(" ");
  const groups = oneOfGroups(command);
  const note = (name: string, spec: OptionSpec) => {
    if (spec.required) return "";
    const group = groups.find((g) => g.includes(name));
    return group ? ` (or ${group.filter((other) => other !== name).map((other) => `--${other}`).join(", ")})` : " (optional)";
  };
  const flags = Object.entries(command.options)
    .map(([name, spec]) => `  --${name}${spec.type === "string" ? " VALUE" : ""}${note(name, spec)}  ${spec.description}`)
    .join("\n");
  return `usage: hatch ${command.path.join(" ")}${positional ? " " + positional : ""} [options] [--json]\n${command.summary}\n${flags}`;
}

function usage(commands: Command[], prefix: string[]): string {
  const shown = commands.filter((c) => prefix.every((p, i) => c.path[i] === p));
  const list = (shown.length ? shown : commands).map((c) => `  hatch ${c.path.join(" ")}  ${c.summary}`);
  return ["usage: hatch <command> [options] [--json]", "", `  hatch serve  ${SERVE_SUMMARY}`, ...list].join("\n");
}
