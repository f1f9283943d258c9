import type { HatchConfig } from "../config.ts";
import type { Platform } from "../platform/index.ts";

/** A CLI option: a string flag, or a boolean switch. */
export interface OptionSpec {
  type: "string" | "boolean";
  required?: boolean;
  description: string;
}

/** What a command can reach: the config and, opened on demand, the platform over the database. */
export interface CommandContext {
  config: HatchConfig;
  platform(): Promise<Platform>;
  /** The whole of standard input: how a secret reaches a command without showing on its command line. */
  readStdin(): Promise<string>;
}

/** One CLI command, e.g. `admin user add`. */
export interface Command {
  path: string[];
  summary: string;
  /** Positional argument names, in order (e.g. `KEY [VALUE]`). */
  positionals?: { name: string; required: boolean }[];
  options: Record<string, OptionSpec>;
  /** Returns a result printed as JSON with --json, else by `human`. */
  run(ctx: CommandContext, values: Record<string, string | boolean | undefined>, positionals: string[]): Promise<unknown>;
  human?(result: unknown): string;
}

/** Raised for bad arguments: the CLI prints usage and exits non-zero. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** Read a required string option (parseArgs already enforced presence for `required`). */
export function str(values: Record<string, string | boolean | undefined>, name: string): string {
  const value = values[name];
  if (typeof value !== "string" || value === "") throw new UsageError(`--${name} is required`);
  return value;
}
