import { Cron } from "croner";
import { badRequest, isOneLineText } from "../platform/index.ts";
import { MANUAL_SCHEDULE, SCHEDULE_TIMEZONE, type RunnerSettings } from "./workflow.ts";

/** Longest workflow name: it is a label on a card, not a description. */
export const MAX_NAME_LENGTH = 80;
/** Longest instruction: a long system prompt fits; a pasted book does not. */
export const MAX_INSTRUCTION_LENGTH = 32_000;
/** Longest command line: a script path with arguments, not an inline program. */
export const MAX_COMMAND_LENGTH = 4096;
/** Shortest runner timeout. */
export const MIN_TIMEOUT_SECONDS = 1;
/** Longest runner timeout: a run is a turn, not a daemon. */
export const MAX_TIMEOUT_SECONDS = 3600;
/** Default command timeout: generous for an agent CLI, short enough to free the worker. */
export const DEFAULT_COMMAND_TIMEOUT_SECONDS = 120;
/** Default OpenAI request timeout: one completion rarely takes longer. */
export const DEFAULT_OPENAI_TIMEOUT_SECONDS = 60;

const SECRET_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

/** A trimmed, non-empty, one-line name of at most MAX_NAME_LENGTH characters, or 400. */
export function checkName(name: string): string {
  const trimmed = name.trim();
  if (!trimmed || trimmed.length > MAX_NAME_LENGTH) {
    throw badRequest("invalid_name", `Cannot save workflow: the name must be 1 to ${MAX_NAME_LENGTH} characters`);
  }
  if (!isOneLineText(trimmed)) throw badRequest("invalid_name", "Cannot save workflow: the name must be one line, without control or bidirectional-override characters");
  return trimmed;
}

/** The instruction, at most MAX_INSTRUCTION_LENGTH characters, or 400. Stored verbatim: nothing is ever interpolated into it. */
export function checkInstruction(instruction: string): string {
  if (instruction.length > MAX_INSTRUCTION_LENGTH) {
    throw badRequest("invalid_instruction", `Cannot save workflow: the instruction must be at most ${MAX_INSTRUCTION_LENGTH} characters`);
  }
  return instruction;
}

/**
 * `manual`, or a cron expression croner accepts (5 fields, or 6 with seconds, or a nickname such as `@daily`), or 400.
 *
 * @example
 * checkSchedule("0 9 * * 1-5") // weekdays at 09:00 UTC
 */
export function checkSchedule(schedule: string): string {
  const trimmed = schedule.trim();
  if (trimmed === MANUAL_SCHEDULE) return trimmed;
  // croner also takes an ISO date-time as a one-shot job, which would fire once and then sit on the card as scheduled.
  const fields = trimmed.split(/\s+/).length;
  if (!trimmed.startsWith("@") && fields !== 5 && fields !== 6) {
    throw badRequest("invalid_schedule", `Cannot use schedule "${trimmed}": a cron expression has 5 fields, or 6 with seconds`);
  }
  let next: Date | null | undefined;
  try {
    const cron = new Cron(trimmed, { paused: true, mode: "5-or-6-parts", timezone: SCHEDULE_TIMEZONE });
    next = cron.nextRun();
    cron.stop();
  } catch (error) {
    throw badRequest("invalid_schedule", `Cannot use schedule "${trimmed}": ${(error as Error).message}`);
  }
  // "0 0 30 2 *" (30 February) parses, and would sit on the card as scheduled while never firing.
  if (!next) throw badRequest("invalid_schedule", `Cannot use schedule "${trimmed}": it never fires`);
  return trimmed;
}

/** Runner settings as a client sends them (timeouts optional). */
export type RunnerSettingsInput =
  | { kind: "command"; command: string; timeoutSeconds?: number }
  | { kind: "openai"; baseUrl: string; model: string; apiKeySecret: string; timeoutSeconds?: number };

/** Validate runner settings and fill their defaults, or 400 naming the field. */
export function checkRunner(input: RunnerSettingsInput): RunnerSettings {
  if (input.kind === "command") {
    const command = input.command.trim();
    if (!command || command.length > MAX_COMMAND_LENGTH) {
      throw badRequest("invalid_command", `Cannot save workflow: the command must be 1 to ${MAX_COMMAND_LENGTH} characters`);
    }
    if (command.includes("\0")) throw badRequest("invalid_command", "Cannot save workflow: the command holds a NUL byte, which no program can receive");
    return { kind: "command", command, timeoutSeconds: checkTimeout(input.timeoutSeconds ?? DEFAULT_COMMAND_TIMEOUT_SECONDS) };
  }
  let url: URL;
  try {
    url = new URL(input.baseUrl);
  } catch {
    throw badRequest("invalid_base_url", `Cannot save workflow: "${input.baseUrl}" is not a URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw badRequest("invalid_base_url", "Cannot save workflow: the base URL must be http or https");
  }
  // The workflow and its runs' errors are read by every manager of it: a password there would be theirs.
  if (url.username !== "" || url.password !== "") {
    throw badRequest("invalid_base_url", "Cannot save workflow: the base URL must not carry a user name or password; the API key goes in the project secret");
  }
  if (!input.model.trim()) throw badRequest("invalid_model", "Cannot save workflow: the model is empty");
  if (!SECRET_ID.test(input.apiKeySecret)) {
    throw badRequest("invalid_secret_id", `Cannot save workflow: "${input.apiKeySecret}" is not a valid secret id`);
  }
  return {
    kind: "openai",
    baseUrl: input.baseUrl.replace(/\/+$/, ""),
    model: input.model.trim(),
    apiKeySecret: input.apiKeySecret,
    timeoutSeconds: checkTimeout(input.timeoutSeconds ?? DEFAULT_OPENAI_TIMEOUT_SECONDS),
  };
}

function checkTimeout(seconds: number): number {
  if (!Number.isInteger(seconds) || seconds < MIN_TIMEOUT_SECONDS || seconds > MAX_TIMEOUT_SECONDS) {
    throw badRequest("invalid_timeout", `Cannot save workflow: the timeout must be ${MIN_TIMEOUT_SECONDS} to ${MAX_TIMEOUT_SECONDS} seconds`);
  }
  return seconds;
}
