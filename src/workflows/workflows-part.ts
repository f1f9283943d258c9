import { join } from "node:path";
import type { Db } from "../db/index.ts";
import type { Platform } from "../platform/index.ts";
import type { ProcessCgroups } from "../pty/index.ts";
import { CommandRunner } from "./command-runner.ts";
import { killRunProcesses, removeRunScratch } from "./leftover-runs.ts";
import { OpenAiRunner } from "./openai-runner.ts";
import { RunBus } from "./run-bus.ts";
import { Runs, type ThreadLimit } from "./runs.ts";
import { WorkflowScheduler } from "./scheduler.ts";
import type { RunnerCommandSpawner } from "./spawn-runner-command.ts";
import { SpendLimits } from "./spend-limits.ts";
import { TEMPLATES } from "./templates.ts";
import { Triggers } from "./triggers.ts";
import { WorkerPool } from "./worker-pool.ts";
import { WorkflowEngine } from "./workflow-engine.ts";
import { Workflows } from "./workflows.ts";

/** Runs at once by default: a small server runs a few agent turns in parallel; a burst queues. */
export const DEFAULT_POOL_SIZE = 4;
/** Waits before retrying a runner whose backend was unreachable or busy: quick first, then backing off. */
export const DEFAULT_RETRY_DELAYS_MS: readonly number[] = [5_000, 30_000, 120_000];
/**
 * How much of its past a one-thread run sees: enough turns for a conversation,
 * bounded so a year-old thread stays cheap, and few enough characters (some 25k
 * model tokens) that a long answer cannot push every later prompt past a model's context.
 */
export const THREAD_LIMIT: ThreadLimit = { turns: 50, chars: 100_000 };
/**
 * How often working runs have their creator's access checked again: the same
 * cadence as the terminal's reaper, which ends a removed member's sessions.
 */
export const DEFAULT_ACCESS_CHECK_MS = 15_000;
/** Folder in the data dir holding each command run's scratch dir while it runs. */
export const RUN_SCRATCH_FOLDER = "workflow-runs";

/** The stores over one database: all the CLI needs. */
export interface WorkflowStores {
  workflows: Workflows;
  triggers: Triggers;
  runs: Runs;
  limits: SpendLimits;
}

/** Build the stores (no pool, no scheduler): for the CLI and for the part. */
export function createWorkflowStores(db: Db, now: () => number = Date.now): WorkflowStores {
  const runs = new Runs(db, now);
  return { workflows: new Workflows(db, now), triggers: new Triggers(db, now), runs, limits: new SpendLimits(db, now) };
}

/** Options of the workflows part; the tuning fields have the defaults above. */
export interface WorkflowsPartOptions {
  platform: Platform;
  dataDir: string;
  /** The environment runner commands start from, before sensitive names are stripped. */
  baseEnv: Record<string, string | undefined>;
  poolSize?: number;
  retryDelaysMs?: readonly number[];
  /** How often working runs whose creator lost access are stopped (`engine.stopRunsOfRevokedCreators`). */
  accessCheckMs?: number;
  /** Where each command run gets a cgroup (see `openProcessCgroups`). */
  cgroups: ProcessCgroups;
  /** Spawns runner commands (confined: see `createRunnerSpawner`). */
  spawn: RunnerCommandSpawner;
  fetch?: typeof fetch;
  now?: () => number;
}

/**
 * The running workflows part. Hooks for the channels part: `engine.fireMessage`
 * (fire with a message and its source), `bus.subscribe` (a run's updates),
 * `triggers.addMessage` / `triggers.removeMessage` (a binding's message
 * trigger), `workflows.get(id).announce` (the delivery policy, read per answer).
 */
export interface WorkflowsPart extends WorkflowStores, AsyncDisposable {
  bus: RunBus;
  pool: WorkerPool;
  engine: WorkflowEngine;
  scheduler: WorkflowScheduler;
  /** Tell the part a workflow changed (created, edited, deleted) so its schedule follows. */
  changed(workflowId: string): void;
}

/**
 * Build the part and start it: clear what a previous process's runs left, flag
 * outdated template installs, re-queue its queued runs, start the scheduler and
 * the periodic check of working runs' creators.
 */
export async function startWorkflowsPart(options: WorkflowsPartOptions): Promise<WorkflowsPart> {
  const now = options.now ?? Date.now;
  const stores = createWorkflowStores(options.platform.db, now);
  const bus = new RunBus();
  const pool = new WorkerPool({ size: options.poolSize ?? DEFAULT_POOL_SIZE, onError: (e) => console.error("hatch: workflow run crashed", e) });
  const scratchRoot = join(options.dataDir, RUN_SCRATCH_FOLDER);
  await clearLeftovers(stores.runs, scratchRoot);
  const runners = {
    command: new CommandRunner({ spawn: options.spawn, baseEnv: options.baseEnv, scratchRoot, cgroups: options.cgroups }),
    openai: new OpenAiRunner({ revealSecret: (projectId, id) => options.platform.secrets.reveal("project", projectId, id), fetch: options.fetch, now }),
  };
  const engine = new WorkflowEngine({
    ...stores,
    bus,
    pool,
    runners,
    platform: options.platform,
    retryDelaysMs: options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS,
    threadLimit: THREAD_LIMIT,
    now,
  });
  const scheduler = new WorkflowScheduler({
    workflows: stores.workflows,
    fire: (workflow) => engine.fire({ workflowId: workflow.id, trigger: { id: null, kind: "schedule" }, source: { kind: "schedule", schedule: workflow.schedule } }),
    unfinished: (runId) => {
      const status = stores.runs.get(runId)?.status;
      return status === "queued" || status === "waiting-retry" || status === "running";
    },
    unfinishedScheduledRuns: () =>
      stores.runs
        .unfinished()
        .filter((run) => run.trigger.kind === "schedule")
        .map((run) => ({ workflowId: run.workflowId, runId: run.id })),
  });
  stores.workflows.flagOutdatedTemplates(TEMPLATES.values());
  engine.recover();
  scheduler.start();
  // `hatch admin member remove` is another process: a running server learns of it only from the database.
  const accessCheck = setInterval(
    () => void engine.stopRunsOfRevokedCreators().catch((error: unknown) => console.error("hatch: stopping the runs of creators who lost access failed", error)),
    options.accessCheckMs ?? DEFAULT_ACCESS_CHECK_MS,
  );
  return {
    ...stores,
    bus,
    pool,
    engine,
    scheduler,
    changed: (id) => {
      scheduler.sync(id);
      if (!stores.workflows.get(id)) engine.forget(id);
    },
    [Symbol.asyncDispose]: async () => {
      clearInterval(accessCheck);
      await scheduler[Symbol.asyncDispose]();
      await engine[Symbol.asyncDispose]();
    },
  };
}

/**
 * Before any run starts: kill the processes of runs a previous server left
 * `running` (it crashed, or was killed, mid-run; `recover` then fails those
 * runs), and remove the scratch dirs of every run it did not finish.
 */
async function clearLeftovers(runs: Runs, scratchRoot: string): Promise<void> {
  const interrupted = runs.unfinished().filter((run) => run.status === "running").map((run) => run.id);
  const killed = await killRunProcesses(interrupted);
  if (killed.length > 0) console.warn(`hatch: killed ${killed.length} processes left running by ${interrupted.length} runs of the previous server`);
  await removeRunScratch(scratchRoot);
}
