import type { HatchConfig } from "../config.ts";
import type { Platform } from "../platform/index.ts";

/** A CLI option: a string flag, or a boolean switch. */
export interface OptionSpec {
  type: "string" | "boolean";
  required?: boolean;
  /** Names a group of options of which exactly one must be given (checked, and shown in help, for the group). */
  oneOf?: string;
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
  /**
   * The result for a person: text, or a listing as one string per row, each
   * printed on one line (a line break a member or caller wrote into a field
   * shows as `\n`, so it cannot fake a row).
   */
  human?(result: unknown): string | string[];
  /** Only reads: refused on a data dir holding no database, rather than answered from a new, empty one. */
  readsOnly?: boolean;
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

/**
 * Read an optional whole-number option in [min, max]: digits only, so a hex
 * (`0x2`), exponent (`1e1`) or padded value is refused rather than read as
 * some other number (`rule remove --id 0x2` would remove rule 2).
 */
export function integerOption(values: Record<string, string | boolean | undefined>, name: string, range: { min: number; max: number; what: string }): number | undefined {
  const value = values[name];
  if (value === undefined) return undefined;
  const number = typeof value === "string" && /^\d{1,15}$/.test(value) ? Number(value) : NaN;
  if (!(number >= range.min && number <= range.max)) throw new UsageError(`--${name} must be ${range.what}, not "${String(value)}"`);
  return number;
}

/** ISO 8601 as the CLI takes it: a date, or a date and time with an optional zone (Z or ±hh:mm). */
const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?)?$/;

/**
 * Read an optional ISO 8601 time option as epoch milliseconds. `Date.parse`
 * alone takes "1" for 2001 and rolls 2026-02-30 over to March: both are
 * refused. A time without a zone is UTC, as a date alone is.
 */
export function timeOption(values: Record<string, string | boolean | undefined>, name: string): number | undefined {
  const value = values[name];
  if (value === undefined) return undefined;
  const match = typeof value === "string" ? ISO_TIME.exec(value) : null;
  const refused = () => new UsageError(`--${name} must be an ISO 8601 time (2026-11-24 or 2026-11-24T09:30Z), not "${String(value)}"`);
  if (!match) throw refused();
  const [, year, month, day, hour = "00", minute = "00", second = "00", zone] = match;
  // The date and time as written must exist: no day 30 in February, no hour 25.
  const asWritten = new Date(Date.UTC(Number(year), Number(month) - 1, Number(day), Number(hour), Number(minute), Number(second)));
  const exists =
    asWritten.getUTCFullYear() === Number(year) && asWritten.getUTCMonth() === Number(month) - 1 && asWritten.getUTCDate() === Number(day) &&
    asWritten.getUTCHours() === Number(hour) && asWritten.getUTCMinutes() === Number(minute) && asWritten.getUTCSeconds() === Number(second);
  const time = Date.parse(match[4] !== undefined && zone === undefined ? `${match.input}Z` : match.input);
  if (!exists || Number.isNaN(time)) throw refused();
  return time;
}
