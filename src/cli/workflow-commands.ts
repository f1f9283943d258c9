import { localUrl } from "../config.ts";
import { WebhookTokens } from "../fire/index.ts";
import { notFound, type Platform } from "../platform/index.ts";
import {
  createWorkflowStores,
  MAX_RUNS_PAGE,
  MAX_TIMEOUT_SECONDS,
  MIN_TIMEOUT_SECONDS,
  requireRunnableCreator,
  WORKFLOW_MODES,
  type ListedRun,
  type Workflow,
  type WorkflowMode,
} from "../workflows/index.ts";
import { integerOption, str, UsageError, type Command } from "./command.ts";

/** Runs `workflow runs` shows unless --limit says otherwise. */
const DEFAULT_RUNS_SHOWN = 20;

function stores(platform: Platform) {
  return createWorkflowStores(platform.db);
}

function requireWorkflow(platform: Platform, id: string): Workflow {
  const workflow = stores(platform).workflows.get(id);
  if (!workflow) throw notFound("workflow_not_found", `Cannot find workflow "${id}"`);
  return workflow;
}

function mode(value: string | boolean | undefined): WorkflowMode | undefined {
  if (value === undefined) return undefined;
  if (!WORKFLOW_MODES.includes(value as WorkflowMode)) throw new UsageError(`--mode must be one of ${WORKFLOW_MODES.join(", ")}`);
  return value as WorkflowMode;
}

function timeout(values: Record<string, string | boolean | undefined>): number | undefined {
  return integerOption(values, "timeout", { min: MIN_TIMEOUT_SECONDS, max: MAX_TIMEOUT_SECONDS, what: `a whole number of seconds from ${MIN_TIMEOUT_SECONDS} to ${MAX_TIMEOUT_SECONDS}` });
}

/** One run as a line: number, status, trigger, then its answers (and later background results) or its error. */
function runLine(run: ListedRun): string {
  const answers = run.events
    .filter((e) => e.type === "answer" || e.type === "background")
    .map((e) => (e.type === "background" ? "background: " : "") + JSON.stringify(e.text) + (e.truncated ? "…" : ""));
  const outcome = run.status === "failed" ? `error: ${run.error}` : run.cancelled ? `cancelled ${run.cancelled}` : answers.join(" ");
  return `#${run.number} ${run.status} (${run.trigger.kind}) ${run.id}${outcome ? `  ${outcome}` : ""}`;
}

/** `hatch workflow ...`: add, list, rotate a fire token, read runs. */
export const workflowCommands: Command[] = [
  {
    path: ["workflow", "add"],
    summary: "Create a command workflow that runs as OWNER (a member of the project)",
    options: {
      project: { type: "string", required: true, description: "project slug" },
      owner: { type: "string", required: true, description: "creator's email: runs execute as them" },
      name: { type: "string", required: true, description: "workflow name" },
      command: { type: "string", required: true, description: "shell command; the prompt arrives on stdin" },
      mode: { type: "string", description: "one-thread (default) or fresh" },
      instruction: { type: "string", description: "instruction placed before the untrusted input" },
      timeout: { type: "string", description: "command timeout in seconds (default 120)" },
    },
    run: async (ctx, v) => {
      // Malformed values first: a usage error (exit 2), whatever the project and owner turn out to be.
      const runner = { kind: "command" as const, command: str(v, "command"), timeoutSeconds: timeout(v) };
      const threadMode = mode(v.mode);
      const platform = await ctx.platform();
      const project = platform.projects.requireBySlug(str(v, "project"));
      const owner = platform.users.requireByEmail(str(v, "owner"));
      // What the HTTP route and every run check: the runs execute as the owner.
      requireRunnableCreator(platform, project, owner, { kind: "command" });
      const create = () =>
        stores(platform).workflows.create({
          projectId: project.id,
          createdBy: owner.id,
          name: str(v, "name"),
          instruction: typeof v.instruction === "string" ? v.instruction : undefined,
          runner,
          mode: threadMode,
        });
      return platform.audit.recorded(create, (workflow) => ({
        action: "workflow.add",
        userId: owner.id,
        projectId: project.id,
        target: workflow.id,
        detail: { name: workflow.name, runner: "command", via: "cli" },
      }));
    },
    human: (r) => {
      const w = r as Workflow;
      return `created workflow ${w.name} (${w.id}), ${w.mode}, ${w.status}\nissue its fire token with: hatch workflow token rotate --workflow ${w.id}`;
    },
  },
  {
    path: ["workflow", "list"],
    readsOnly: true,
    summary: "List a project's workflows",
    options: { project: { type: "string", required: true, description: "project slug" } },
    run: async (ctx, v) => {
      const platform = await ctx.platform();
      return stores(platform).workflows.list(platform.projects.requireBySlug(str(v, "project")).id);
    },
    human: (r) => ((r as Workflow[]).length ? (r as Workflow[]).map((w) => `${w.id}  ${w.name}  ${w.status}  ${w.mode}  ${w.schedule}  ${w.runner.kind}`) : "(no workflows)"),
  },
  {
    path: ["workflow", "reassign"],
    summary: "Make OWNER the workflow's creator: its runs execute as them from the next start",
    options: {
      workflow: { type: "string", required: true, description: "workflow id" },
      owner: { type: "string", required: true, description: "the new creator's email (a member who may run it)" },
    },
    run: async (ctx, v) => {
      const platform = await ctx.platform();
      const workflow = requireWorkflow(platform, str(v, "workflow"));
      const project = platform.projects.get(workflow.projectId)!;
      const owner = platform.users.requireByEmail(str(v, "owner"));
      requireRunnableCreator(platform, project, owner, workflow.runner);
      if (workflow.createdBy === owner.id) return { ...workflow, creatorEmail: owner.email };
      const updated = platform.audit.recorded(() => stores(platform).workflows.setCreator(workflow.id, owner.id), {
        action: "workflow.reassign",
        userId: owner.id,
        projectId: project.id,
        target: workflow.id,
        detail: { previousCreator: workflow.createdBy, via: "cli" },
      });
      return { ...updated, creatorEmail: owner.email };
    },
    human: (r) => {
      const w = r as Workflow & { creatorEmail: string };
      return `workflow ${w.name} (${w.id}) now runs as ${w.creatorEmail}`;
    },
  },
  {
    path: ["workflow", "token", "rotate"],
    summary: "Issue a new fire token (the old one stops at once); the first call creates the webhook trigger",
    options: {
      workflow: { type: "string", required: true, description: "workflow id" },
      trigger: { type: "string", description: "webhook trigger id, when the workflow has several" },
    },
    run: async (ctx, v) => {
      const platform = await ctx.platform();
      const workflow = requireWorkflow(platform, str(v, "workflow"));
      const { triggers } = stores(platform);
      const live = triggers.list(workflow.id).filter((t) => t.kind === "webhook" && t.revokedAt === null);
      const chosen = typeof v.trigger === "string" ? live.find((t) => t.id === v.trigger) : live.length <= 1 ? live[0] : undefined;
      if (typeof v.trigger === "string" && !chosen) throw notFound("trigger_not_found", `Cannot find a live webhook trigger "${v.trigger}" on ${workflow.id}`);
      if (!chosen && live.length > 1) throw new UsageError(`${workflow.id} has ${live.length} webhook triggers: pick one with --trigger (${live.map((t) => t.id).join(", ")})`);
      const tokens = new WebhookTokens(triggers);
      // Rolled back with its entry: a rotate whose new token is never printed must not have killed the old one.
      const issued = platform.audit.recorded(
        () => (chosen ? tokens.rotate(chosen.id) : tokens.issue(workflow.id)),
        (issued) => ({ action: chosen ? "workflow.trigger.rotate" : "workflow.trigger.add", projectId: workflow.projectId, target: issued.trigger.id, detail: { workflowId: workflow.id, via: "cli" } }),
      );
      const fireUrl = `${localUrl(ctx.config.host, ctx.config.port)}/api/webhooks/workflow/${workflow.id}/fire`;
      return { workflowId: workflow.id, triggerId: issued.trigger.id, token: issued.token, fireUrl };
    },
    human: (r) => {
      const t = r as { token: string; fireUrl: string };
      // The example reads the header from a file: a token typed on a command line is kept in shell history and shown by ps.
      return [
        t.token,
        "This token is shown once. Fire with:",
        `  curl -X POST -H @fire-header -H "Content-Type: application/json" -d '{"text":"hello"}' ${t.fireUrl}`,
        `where fire-header (mode 0600) holds the line: Authorization: Bearer ${t.token}`,
      ].join("\n");
    },
  },
  {
    path: ["workflow", "runs"],
    readsOnly: true,
    summary: "Show a workflow's latest runs with status and answers",
    options: {
      workflow: { type: "string", required: true, description: "workflow id" },
      limit: { type: "string", description: `how many (default ${DEFAULT_RUNS_SHOWN})` },
      before: { type: "string", description: "only runs numbered below N (the next page)" },
    },
    run: async (ctx, v) => {
      // Malformed input first: exit 2 whatever the workflow.
      const limit = integerOption(v, "limit", { min: 1, max: MAX_RUNS_PAGE, what: `1 to ${MAX_RUNS_PAGE}` }) ?? DEFAULT_RUNS_SHOWN;
      const before = integerOption(v, "before", { min: 1, max: Number.MAX_SAFE_INTEGER, what: "a whole number of at least 1" });
      const platform = await ctx.platform();
      const workflow = requireWorkflow(platform, str(v, "workflow"));
      return stores(platform).runs.list(workflow.id, { limit, before });
    },
    human: (r) => ((r as ListedRun[]).length ? (r as ListedRun[]).map(runLine) : "(no runs)"),
  },
];
