import { and, eq, ne, sql } from "drizzle-orm";
import { workflows, type Db } from "../db/index.ts";
import { badRequest, newId, notFound } from "../platform/index.ts";
import type { WorkflowTemplate } from "./templates.ts";
import { MANUAL_SCHEDULE, type RunnerSettings, type Workflow, type WorkflowMode, type WorkflowStatus } from "./workflow.ts";
import { checkInstruction, checkName, checkRunner, checkSchedule, type RunnerSettingsInput } from "./workflow-rules.ts";

/** What creating a workflow takes; optional fields get the defaults of a chat-style bot. */
export interface NewWorkflow {
  projectId: string;
  createdBy: string;
  name: string;
  instruction?: string;
  runner: RunnerSettingsInput;
  mode?: WorkflowMode;
  status?: WorkflowStatus;
  schedule?: string;
  announce?: boolean;
  template?: WorkflowTemplate;
}

/** The fields an edit may change. The status `awaiting-template-upgrade` is the system's to set. */
export interface WorkflowPatch {
  name?: string;
  instruction?: string;
  mode?: WorkflowMode;
  status?: Exclude<WorkflowStatus, "awaiting-template-upgrade">;
  schedule?: string;
  announce?: boolean;
}

type Row = typeof workflows.$inferSelect;

/**
 * What accepting a fire reads of a workflow: not the instruction, which can
 * hold 32,000 characters that a fire never looks at (reading a 30 KB one took
 * 11.5 µs a fire, this row 2.4 µs), and of the runner only its kind.
 */
export type FireTarget = Pick<Workflow, "id" | "projectId" | "name" | "mode" | "status" | "createdBy"> & { runnerKind: RunnerSettings["kind"] };

/** The workflow store of every project. */
export class Workflows {
  /** Prepared once: runs and routes read workflows by id all the time. */
  readonly #byId;
  /** Prepared once: every fire reads its workflow's fire target. */
  readonly #fireTarget;

  constructor(
    private readonly db: Db,
    private readonly now: () => number = Date.now,
  ) {
    this.#byId = db.select().from(workflows).where(eq(workflows.id, sql.placeholder("id"))).prepare();
    const { id, projectId, name, mode, status, createdBy, runner } = workflows;
    this.#fireTarget = db.select({ id, projectId, name, mode, status, createdBy, runnerKind: runner }).from(workflows).where(eq(workflows.id, sql.placeholder("id"))).prepare();
  }

  /** Validate and store a new workflow. A template fixes instruction, schedule and mode. */
  create(input: NewWorkflow): Workflow {
    const template = input.template;
    const at = this.now();
    const row: Row = {
      id: `wf-${newId()}`,
      projectId: input.projectId,
      name: checkName(input.name),
      instruction: checkInstruction(template?.instruction ?? input.instruction ?? ""),
      runner: input.runner.kind,
      runnerConfig: JSON.stringify(checkRunner(input.runner)),
      mode: template?.mode ?? input.mode ?? "one-thread",
      status: input.status ?? "active",
      schedule: checkSchedule(template?.schedule ?? input.schedule ?? MANUAL_SCHEDULE),
      announce: input.announce ?? false,
      templateId: template?.id ?? null,
      templateVersion: template?.version ?? null,
      createdBy: input.createdBy,
      createdAt: at,
      updatedAt: at,
    };
    if (row.status === "awaiting-template-upgrade") throw badRequest("invalid_status", "Cannot create a workflow awaiting a template upgrade");
    this.db.insert(workflows).values(row).run();
    return toWorkflow(row);
  }

  /** The workflow with this id, or null. */
  get(id: string): Workflow | null {
    const row = this.#byId.get({ id });
    return row ? toWorkflow(row) : null;
  }

  /** What a fire needs to know of the workflow with this id, or null. */
  fireTarget(id: string): FireTarget | null {
    return this.#fireTarget.get({ id }) ?? null;
  }

  /** The workflow with this id in this project, or 404 (another project's looks absent). */
  require(projectId: string, id: string): Workflow {
    const workflow = this.get(id);
    if (!workflow || workflow.projectId !== projectId) throw notFound("workflow_not_found", `Cannot find workflow "${id}"`);
    return workflow;
  }

  /** A project's workflows, optionally only those one user created; oldest first. */
  list(projectId: string, createdBy?: string): Workflow[] {
    const where = createdBy ? and(eq(workflows.projectId, projectId), eq(workflows.createdBy, createdBy)) : eq(workflows.projectId, projectId);
    return this.db.select().from(workflows).where(where).orderBy(workflows.createdAt).all().map(toWorkflow);
  }

  /** Active workflows with a cron schedule, for the scheduler. */
  scheduled(): Workflow[] {
    return this.db
      .select()
      .from(workflows)
      .where(and(eq(workflows.status, "active"), ne(workflows.schedule, MANUAL_SCHEDULE)))
      .all()
      .map(toWorkflow);
  }

  /** Apply an edit after validating every field; a bad field changes nothing. */
  update(id: string, patch: WorkflowPatch): Workflow {
    const set: Partial<Row> = { updatedAt: this.now() };
    if (patch.name !== undefined) set.name = checkName(patch.name);
    if (patch.instruction !== undefined) set.instruction = checkInstruction(patch.instruction);
    if (patch.schedule !== undefined) set.schedule = checkSchedule(patch.schedule);
    if (patch.mode !== undefined) set.mode = patch.mode;
    if (patch.status !== undefined) set.status = patch.status;
    if (patch.announce !== undefined) set.announce = patch.announce;
    const row = this.db.update(workflows).set(set).where(eq(workflows.id, id)).returning().get();
    if (!row) throw notFound("workflow_not_found", `Cannot find workflow "${id}"`);
    return toWorkflow(row);
  }

  /** Put back the status a workflow had, any status the system's own included (a delete that did not happen). */
  putBackStatus(id: string, status: WorkflowStatus): void {
    this.db.update(workflows).set({ status, updatedAt: this.now() }).where(eq(workflows.id, id)).run();
  }

  /** Record a new creator (runs started from now on execute as them); the caller checked they may be one. */
  setCreator(id: string, userId: string): Workflow {
    const row = this.db.update(workflows).set({ createdBy: userId, updatedAt: this.now() }).where(eq(workflows.id, id)).returning().get();
    if (!row) throw notFound("workflow_not_found", `Cannot find workflow "${id}"`);
    return toWorkflow(row);
  }

  /** Delete a workflow with its triggers and runs; true when it existed. */
  delete(id: string): boolean {
    return this.db.delete(workflows).where(eq(workflows.id, id)).returning({ id: workflows.id }).all().length > 0;
  }

  /**
   * Mark installs of an older template version `awaiting-template-upgrade`, so
   * they stop firing until someone accepts the new instruction. Returns their ids.
   */
  flagOutdatedTemplates(templates: Iterable<WorkflowTemplate>): string[] {
    const flagged: string[] = [];
    for (const template of templates) {
      for (const row of this.db.select().from(workflows).where(eq(workflows.templateId, template.id)).all()) {
        if ((row.templateVersion ?? 0) >= template.version || row.status === "archived") continue;
        this.db.update(workflows).set({ status: "awaiting-template-upgrade", updatedAt: this.now() }).where(eq(workflows.id, row.id)).run();
        flagged.push(row.id);
      }
    }
    return flagged;
  }

  /** Install the current template instruction and make the workflow active again. */
  upgradeTemplate(id: string, template: WorkflowTemplate): Workflow {
    const row = this.db
      .update(workflows)
      .set({ instruction: template.instruction, templateVersion: template.version, status: "active", updatedAt: this.now() })
      .where(eq(workflows.id, id))
      .returning()
      .get();
    if (!row) throw notFound("workflow_not_found", `Cannot find workflow "${id}"`);
    return toWorkflow(row);
  }
}

function toWorkflow(row: Row): Workflow {
  return {
    id: row.id,
    projectId: row.projectId,
    name: row.name,
    instruction: row.instruction,
    runner: JSON.parse(row.runnerConfig) as RunnerSettings,
    mode: row.mode,
    status: row.status,
    schedule: row.schedule,
    announce: row.announce,
    template: row.templateId ? { id: row.templateId, version: row.templateVersion ?? 0 } : null,
    createdBy: row.createdBy,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}
