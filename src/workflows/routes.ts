import { Elysia, t } from "elysia";
import { AGENT_PACKAGE, badRequest, conflict, parseJsonRequest, requireJsonBody, requireObjectBody, requireProjectAdmin, sessionTokenOf, type Platform, type ProjectCaller } from "../platform/index.ts";
import { managesAll, requireCreateAccess, requireManageable, requireRunnableCreator, requireSecretAccess, requireWorkflowAccess } from "./access.ts";
import { pendingTemplateUpgrade, TEMPLATES } from "./templates.ts";
import type { Workflow } from "./workflow.ts";
import type { WorkflowsPart } from "./workflows-part.ts";

/** Collaborators of the workflow routes. */
export interface WorkflowRoutesOptions {
  platform: Platform;
  part: WorkflowsPart;
}

const mode = t.Union([t.Literal("one-thread"), t.Literal("fresh")]);
const runner = t.Union([
  t.Object({ kind: t.Literal("command"), command: t.String({ maxLength: 4096 }), timeoutSeconds: t.Optional(t.Integer()) }),
  t.Object({
    kind: t.Literal("openai"),
    baseUrl: t.String({ maxLength: 2048 }),
    model: t.String({ maxLength: 200 }),
    apiKeySecret: t.String({ maxLength: 128 }),
    timeoutSeconds: t.Optional(t.Integer()),
  }),
]);

/** A workflow with its triggers, as the routes answer it. */
export function workflowView(part: WorkflowsPart, workflow: Workflow) {
  return { ...workflow, triggers: part.triggers.list(workflow.id) };
}

/**
 * The signed-in caller of a workflow route, or 401/403; 404 exactly like an
 * unknown route when the agent package, which workflows belong to, is hidden
 * from them (as its terminal is, and as their runs are cancelled package-off).
 * The route plugins resolve it in `derive`, which Elysia runs before it
 * validates the query and body: a caller who may not use the routes learns
 * nothing from a malformed request.
 */
export async function workflowCaller(platform: Platform, token: string | undefined): Promise<ProjectCaller> {
  const caller = await platform.callers.resolveInProject(token);
  platform.callers.requirePackage(caller, AGENT_PACKAGE);
  return caller;
}

/** The workflow the caller may manage, or 403/404. */
export function manageableWorkflow(part: WorkflowsPart, caller: ProjectCaller, id: string): Workflow {
  return requireManageable(caller, part.workflows.require(caller.project.id, id));
}

/**
 * The workflow management routes under /api/workflows: members holding
 * `core.execute` manage the workflows they created; `workflows.manage` (owners,
 * admins) manages every workflow of the project.
 */
export function workflowRoutes(options: WorkflowRoutesOptions) {
  const { platform, part } = options;
  // Workflows whose DELETE waits for their runs to stop. Archived first so no fire is taken; an edit
  // meanwhile (status active, an accepted template upgrade) would let one in that runs after the row is gone.
  const deleting = new Set<string>();
  const notBeingDeleted = (workflow: Workflow) => {
    if (deleting.has(workflow.id)) throw conflict("workflow_deleting", `Cannot change workflow "${workflow.name}": it is being deleted`);
    return workflow;
  };

  return new Elysia({ name: "workflow-routes", prefix: "/api/workflows" })
    .derive(async ({ request }) => ({ caller: await workflowCaller(platform, sessionTokenOf(request.headers.get("cookie"))) }))
    .onParse(parseJsonRequest)
    .onTransform(requireJsonBody)
    .get("/", ({ caller }) => {
      requireWorkflowAccess(caller);
      const list = part.workflows.list(caller.project.id, managesAll(caller) ? undefined : caller.user.id);
      return { workflows: list.map((w) => workflowView(part, w)) };
    })
    .get("/templates", ({ caller }) => {
      requireWorkflowAccess(caller);
      return { templates: [...TEMPLATES.values()] };
    })
    .post(
      "/",
      ({ body, caller, set }) => {
        requireCreateAccess(caller);
        requireSecretAccess(caller, body.runner);
        const template = body.template === undefined ? undefined : TEMPLATES.get(body.template);
        if (body.template !== undefined && !template) throw badRequest("unknown_template", `Cannot install template "${body.template}": no such template`);
        if (template && (body.instruction !== undefined || body.mode !== undefined || body.schedule !== undefined)) {
          throw badRequest("template_fixed", `Cannot install template "${template.id}": it fixes the instruction, mode and schedule`);
        }
        const name = body.name ?? template?.name;
        if (name === undefined) throw badRequest("invalid_name", 'Cannot save workflow: "name" is required');
        const workflow = platform.audit.recordedBy(
          caller,
          "workflow.add",
          () => part.workflows.create({ ...body, name, template, projectId: caller.project.id, createdBy: caller.user.id }),
          (created) => ({ target: created.id, detail: { name: created.name, runner: created.runner.kind, template: template?.id ?? null } }),
        );
        part.changed(workflow.id);
        set.status = 201;
        return workflowView(part, workflow);
      },
      {
        body: t.Object({
          name: t.Optional(t.String({ maxLength: 200 })),
          instruction: t.Optional(t.String({ maxLength: 40_000 })),
          runner,
          mode: t.Optional(mode),
          schedule: t.Optional(t.String({ maxLength: 200 })),
          announce: t.Optional(t.Boolean()),
          status: t.Optional(t.Union([t.Literal("active"), t.Literal("paused")])),
          template: t.Optional(t.String({ maxLength: 100 })),
        }),
      },
    )
    .get("/spend-limit", ({ caller }) => {
      requireWorkflowAccess(caller);
      return { ...part.limits.get(caller.project.id), used: part.limits.usage(caller.project.id) };
    })
    .put(
      "/spend-limit",
      ({ body, caller }) => {
        requireProjectAdmin(caller);
        const limit = platform.audit.recordedBy(caller, "workflow.spend_limit", () => part.limits.set(caller.project.id, body), (set) => ({ target: caller.project.id, detail: { ...set } }));
        return { ...limit, used: part.limits.usage(caller.project.id) };
      },
      { body: t.Object({ runsPerDay: t.Integer(), tokensPerDay: t.Integer() }) },
    )
    .get("/:id", ({ params, caller }) => workflowView(part, manageableWorkflow(part, caller, params.id)))
    .patch(
      "/:id",
      ({ params, body, caller }) => {
        const workflow = notBeingDeleted(manageableWorkflow(part, caller, params.id));
        // Pausing an outdated install, then activating it, would skip the upgrade: only archiving leaves it without one.
        if (body.status && body.status !== "archived" && pendingTemplateUpgrade(workflow)) {
          throw conflict("template_upgrade_required", `Cannot make workflow "${workflow.name}" ${body.status}: accept its template upgrade first (or archive it)`);
        }
        const updated = platform.audit.recordedBy(caller, "workflow.update", () => part.workflows.update(workflow.id, body), () => ({ target: workflow.id, detail: { fields: Object.keys(body) } }));
        part.changed(workflow.id);
        return workflowView(part, updated);
      },
      {
        transform: requireObjectBody,
        body: t.Object({
          name: t.Optional(t.String({ maxLength: 200 })),
          instruction: t.Optional(t.String({ maxLength: 40_000 })),
          mode: t.Optional(mode),
          status: t.Optional(t.Union([t.Literal("active"), t.Literal("paused"), t.Literal("archived")])),
          schedule: t.Optional(t.String({ maxLength: 200 })),
          announce: t.Optional(t.Boolean()),
          // The runner (and the secret an openai runner names) is fixed at creation: refused here, not silently dropped.
          runner: t.Optional(t.Never()),
        }),
      },
    )
    .delete("/:id", async ({ params, caller }) => {
      const workflow = notBeingDeleted(manageableWorkflow(part, caller, params.id));
      if (part.triggers.list(workflow.id).some((tr) => tr.kind === "message")) {
        throw conflict("workflow_bound", `Cannot delete workflow "${workflow.name}": a channel binding fires it; delete the binding first`);
      }
      // Stop new fires (409, not active) and scheduled ones before stopping the runs: stopping can take a while,
      // and a fire accepted meanwhile would run on after its workflow and its run row were gone.
      deleting.add(workflow.id);
      let deleted = false;
      try {
        part.workflows.update(workflow.id, { status: "archived" });
        part.changed(workflow.id);
        await part.engine.cancelAll(workflow.id);
        platform.audit.recordedBy(caller, "workflow.delete", () => part.limits.deleteKeepingUsage(workflow.id, () => part.workflows.delete(workflow.id)), () => ({
          target: workflow.id,
          detail: { name: workflow.name },
        }));
        deleted = true;
        part.changed(workflow.id);
      } finally {
        // A delete refused (its entry could not be written) keeps the workflow as it was: firing, and scheduled.
        // The runs it cancelled stay cancelled.
        if (!deleted) restoreStatus(part, workflow);
        deleting.delete(workflow.id);
      }
      return { ok: true };
    })
    .post("/:id/take-over", ({ params, caller }) => {
      // Only to oneself: handing a workflow to someone else would run its command as them (their exec.unconfined included).
      const workflow = notBeingDeleted(manageableWorkflow(part, caller, params.id));
      requireRunnableCreator(platform, caller.project, caller.user, workflow.runner);
      if (workflow.createdBy === caller.user.id) return workflowView(part, workflow);
      const updated = platform.audit.recordedBy(caller, "workflow.take_over", () => part.workflows.setCreator(workflow.id, caller.user.id), () => ({
        target: workflow.id,
        detail: { previousCreator: workflow.createdBy },
      }));
      return workflowView(part, updated);
    })
    .post("/:id/upgrade-template", ({ params, caller }) => {
      const workflow = notBeingDeleted(manageableWorkflow(part, caller, params.id));
      const template = pendingTemplateUpgrade(workflow);
      if (!template) throw conflict("no_template_upgrade", `Cannot upgrade workflow "${workflow.name}": it is not awaiting a template upgrade`);
      const upgraded = platform.audit.recordedBy(caller, "workflow.template_upgrade", () => part.workflows.upgradeTemplate(workflow.id, template), () => ({
        target: workflow.id,
        detail: { template: template.id, version: template.version },
      }));
      part.changed(workflow.id);
      return workflowView(part, upgraded);
    })
    .get("/:id/triggers", ({ params, caller }) => {
      const workflow = manageableWorkflow(part, caller, params.id);
      return { triggers: part.triggers.list(workflow.id) };
    });
}

/**
 * Put back the status a workflow had before a delete that did not happen.
 * Logged, not thrown, when that fails too: the delete's own error is the
 * answer, and the workflow is then left archived (not firing), which is safe.
 */
function restoreStatus(part: WorkflowsPart, before: Workflow): void {
  try {
    part.workflows.putBackStatus(before.id, before.status);
    part.changed(before.id);
  } catch (error) {
    console.error(`hatch: workflow ${before.id} is left archived after its delete failed`, error);
  }
}
