/**
 * Workflows: the store, triggers, runs, runners, the bounded worker pool, the
 * engine that fires and executes runs, the scheduler and the management routes.
 *
 * Hooks the channels part uses (see `WorkflowsPart`):
 * - `engine.fireMessage({ bindingId, text, platform, peer, linkedUser, onUpdate })`, resolving with the run once its row is committed (`text` up to MAX_MESSAGE_TEXT_LENGTH)
 * - `bus.subscribe({ runId } | { workflowId }, listener)` for `RunUpdate`s
 * - `triggers.addMessage(workflowId, bindingId)` / `triggers.removeMessage(bindingId)`
 * - `workflows.get(id)?.announce` (the delivery policy, read at each answer)
 */
export { managesAll, requireManageable, requireRunnableCreator, requireWorkflowAccess, resolveRunAs, RUN_FEATURE, type RunAs } from "./access.ts";
export { CommandRunner, MAX_COMMAND_OUTPUT_BYTES, type CommandRunnerOptions } from "./command-runner.ts";
export { chatMessages, CUT_SHORT_NOTE, leftOutNote, MAX_COMPLETION_BYTES, OpenAiRunner, retryAfter, type ChatMessage, type OpenAiRunnerOptions } from "./openai-runner.ts";
export { buildPrompt, renderAnswers, renderDocument, renderInput, UNTRUSTED_NOTE, type Prompt, type ThreadTurn, type TurnInput } from "./prompt.ts";
export { MAX_RETRY_AFTER_MS, MAX_RUN_EVENTS, TOO_MANY_EVENTS_ERROR } from "./run-execution.ts";
export { RunBus, type RunFilter, type RunListener, type RunOutcome, type RunRef, type RunUpdate } from "./run-bus.ts";
export { runRoutes, MAX_RUNS_PAGE } from "./run-routes.ts";
export { sourceLine, type RunSource } from "./run-source.ts";
export { RUN_EVENT_TYPES, RunnerError, RunnerFailedError, RunnerUnavailableError, type Runner, type RunnerErrorDetails, type RunnerRequest, type RunnerResult, type RunEvent } from "./runner.ts";
export { runnerEnvironment } from "./runner-environment.ts";
export { FINISHED_STATUSES, LISTED_EVENT_TEXT_CHARS, LISTED_EVENTS_PER_RUN, RUN_NOT_RECORDED, Runs, type CancelPhase, type ListedRun, type PendingRun, type Run, type RunStatus, type StoredRunEvent, type ThreadLimit, type TriggerKindOfRun } from "./runs.ts";
export { manageableWorkflow, workflowCaller, workflowRoutes, workflowView } from "./routes.ts";
export { WorkflowScheduler } from "./scheduler.ts";
export { createRunnerSpawner, type RunnerCommandSpawner, type RunnerCommandSpec, type RunnerProcess, type RunnerSpawnerOptions } from "./spawn-runner-command.ts";
export { DEFAULT_SPEND_LIMIT, SPEND_LIMIT_REACHED, SpendLimits, type SpendLimit } from "./spend-limits.ts";
export { CHANNEL_ASSISTANT, NO_REPLY, TEMPLATES, type WorkflowTemplate } from "./templates.ts";
export { KEPT_REVOKED_TRIGGERS, MAX_WEBHOOK_TRIGGERS, Triggers, type StoredTokenHash, type Trigger, type TriggerKind } from "./triggers.ts";
export { MANUAL_SCHEDULE, SCHEDULE_TIMEZONE, WORKFLOW_MODES, WORKFLOW_STATUSES, type RunnerSettings, type Workflow, type WorkflowMode, type WorkflowStatus } from "./workflow.ts";
export { checkFireText, MAX_FIRE_TEXT_LENGTH, MAX_MESSAGE_TEXT_LENGTH, WorkflowEngine, type FireRequest, type MessageFire } from "./workflow-engine.ts";
export { MAX_TIMEOUT_SECONDS, MIN_TIMEOUT_SECONDS } from "./workflow-rules.ts";
export { Workflows, type FireTarget, type NewWorkflow, type WorkflowPatch } from "./workflows.ts";
export {
  createWorkflowStores,
  DEFAULT_POOL_SIZE,
  DEFAULT_RETRY_DELAYS_MS,
  RUN_SCRATCH_FOLDER,
  startWorkflowsPart,
  THREAD_LIMIT,
  type WorkflowStores,
  type WorkflowsPart,
  type WorkflowsPartOptions,
} from "./workflows-part.ts";
export { WorkerPool, type PoolJob } from "./worker-pool.ts";
