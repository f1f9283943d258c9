/** What a workflow is: its statuses, modes, runner settings and the shape every API shows. */

/** `active` workflows fire; the others refuse every fire (409) and start no queued run. */
export const WORKFLOW_STATUSES = ["active", "paused", "archived", "awaiting-template-upgrade"] as const;
/** A workflow's status. */
export type WorkflowStatus = (typeof WORKFLOW_STATUSES)[number];

/** `one-thread`: every fire continues one conversation; `fresh`: a blank run per fire. */
export const WORKFLOW_MODES = ["one-thread", "fresh"] as const;
/** A workflow's mode. */
export type WorkflowMode = (typeof WORKFLOW_MODES)[number];

/** The schedule value of a workflow fired only by its triggers (and by hand). */
export const MANUAL_SCHEDULE = "manual";
/** Cron expressions are read in UTC, so a schedule means the same on every host. */
export const SCHEDULE_TIMEZONE = "Etc/UTC";

/** Settings of the `command` runner: a shell command line and its timeout. */
export interface CommandRunnerSettings {
  kind: "command";
  command: string;
  timeoutSeconds: number;
}

/** Settings of the `openai` runner: the endpoint, the model, and the project secret holding the API key. */
export interface OpenAiRunnerSettings {
  kind: "openai";
  /** e.g. https://api.openai.com/v1 — `/chat/completions` is appended. */
  baseUrl: string;
  model: string;
  /** Id of the project-scope secret with the API key (never the key itself). */
  apiKeySecret: string;
  timeoutSeconds: number;
}

/** One runner's settings. */
export type RunnerSettings = CommandRunnerSettings | OpenAiRunnerSettings;

/** A workflow as services and APIs see it. */
export interface Workflow {
  id: string;
  projectId: string;
  name: string;
  instruction: string;
  runner: RunnerSettings;
  mode: WorkflowMode;
  status: WorkflowStatus;
  /** `manual` or a cron expression (UTC). */
  schedule: string;
  /** Delivery policy: announce scheduled and manual runs to linked peers. */
  announce: boolean;
  template: { id: string; version: number } | null;
  /** The user the runs execute as. */
  createdBy: string;
  createdAt: number;
  updatedAt: number;
}
