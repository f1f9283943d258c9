import { Elysia, t } from "elysia";
import { parseJsonRequest, requireJsonBody, requireObjectBody, sessionTokenOf, type Platform } from "../platform/index.ts";
import { manageableWorkflow, workflowCaller } from "./routes.ts";
import type { WorkflowsPart } from "./workflows-part.ts";
import { FINISHED_STATUSES } from "./runs.ts";

/** Longest page of runs one read returns. */
export const MAX_RUNS_PAGE = 200;

const status = t.Union(["queued", "waiting-retry", "running", "succeeded", "failed", "cancelled"].map((s) => t.Literal(s)));

/**
 * Runs of a workflow under /api/workflows/<id>/runs: run by hand, list, read,
 * cancel. The same people who manage the workflow see its runs, real errors included.
 */
export function runRoutes(options: { platform: Platform; part: WorkflowsPart }) {
  const { platform, part } = options;

  return new Elysia({ name: "workflow-run-routes", prefix: "/api/workflows" })
    .derive(async ({ request }) => ({ caller: await workflowCaller(platform, sessionTokenOf(request.headers.get("cookie"))) }))
    .onParse(parseJsonRequest)
    .onTransform(requireJsonBody)
    .post(
      "/:id/runs",
      async ({ params, body, caller, set }) => {
        const workflow = manageableWorkflow(part, caller, params.id);
        const run = await part.engine.fire({
          workflowId: workflow.id,
          trigger: { id: null, kind: "manual" },
          text: body.text ?? null,
          source: { kind: "manual", userId: caller.user.id, email: caller.user.email },
        });
        set.status = 202;
        return run;
      },
      { body: t.Object({ text: t.Optional(t.String()) }), transform: requireObjectBody },
    )
    .get(
      "/:id/runs",
      ({ params, query, caller }) => {
        const workflow = manageableWorkflow(part, caller, params.id);
        const limit = Math.min(query.limit ?? 50, MAX_RUNS_PAGE);
        const runs = part.runs.list(workflow.id, { limit, status: query.status as never, before: query.before });
        // A full page may have more behind it: the next page is the runs numbered below its last.
        return { runs, nextBefore: runs.length === limit ? runs.at(-1)!.number : null };
      },
      {
        query: t.Object({
          limit: t.Optional(t.Numeric({ minimum: 1, maximum: MAX_RUNS_PAGE, multipleOf: 1, title: "limit" })),
          status: t.Optional(status),
          before: t.Optional(t.Numeric({ minimum: 1, multipleOf: 1, title: "before" })),
        }),
      },
    )
    .get("/:id/runs/:runId", ({ params, caller }) => {
      const workflow = manageableWorkflow(part, caller, params.id);
      return part.runs.require(workflow.id, params.runId);
    })
    .post("/:id/runs/:runId/cancel", async ({ params, caller }) => {
      const workflow = manageableWorkflow(part, caller, params.id);
      const run = part.runs.require(workflow.id, params.runId);
      // Recorded as it is asked, with the status the run had, before anything stops: a process killed cannot be
      // undone, so a cancel whose entry cannot be written stops nothing (500). A finished run is refused (409) unrecorded.
      if (!FINISHED_STATUSES.includes(run.status)) {
        platform.audit.write({ action: "workflow.run.cancel", userId: caller.user.id, projectId: caller.project.id, target: run.id, detail: { workflowId: workflow.id, status: run.status } });
      }
      return part.engine.cancel(run.id);
    });
}
