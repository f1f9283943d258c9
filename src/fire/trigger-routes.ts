import { Elysia, t } from "elysia";
import { conflict, notFound, parseJsonRequest, requireJsonBody, sessionTokenOf, type Platform } from "../platform/index.ts";
import { manageableWorkflow, workflowCaller, type WorkflowsPart } from "../workflows/index.ts";
import type { WebhookTokens } from "./webhook-tokens.ts";

/**
 * Webhook triggers of a workflow under /api/workflows/<id>/triggers: create
 * (201, the token shown once), rotate (a new token; the old one stops at once),
 * revoke. Message triggers belong to channel bindings and are refused here.
 */
export function triggerRoutes(options: { platform: Platform; part: WorkflowsPart; tokens: WebhookTokens }) {
  const { platform, part, tokens } = options;

  const liveTrigger = (workflowId: string, triggerId: string) => {
    const trigger = part.triggers.get(triggerId);
    if (!trigger || trigger.workflowId !== workflowId || trigger.revokedAt !== null) throw notFound("trigger_not_found", `Cannot find trigger "${triggerId}"`);
    if (trigger.kind === "message") throw conflict("trigger_system_managed", "A message trigger belongs to its channel binding: delete the binding instead");
    return trigger;
  };

  return new Elysia({ name: "workflow-trigger-routes", prefix: "/api/workflows" })
    .derive(async ({ request }) => ({ caller: await workflowCaller(platform, sessionTokenOf(request.headers.get("cookie"))) }))
    .onParse(parseJsonRequest)
    .onTransform(requireJsonBody)
    .post(
      "/:id/triggers",
      ({ params, caller, set }) => {
        const workflow = manageableWorkflow(part, caller, params.id);
        const issued = platform.audit.recordedBy(caller, "workflow.trigger.add", () => tokens.issue(workflow.id), (issued) => ({
          target: issued.trigger.id,
          detail: { workflowId: workflow.id, kind: "webhook" },
        }));
        set.status = 201;
        return issued;
      },
      { body: t.Object({ kind: t.Literal("webhook") }) },
    )
    .post("/:id/triggers/:triggerId/rotate", ({ params, caller }) => {
      const workflow = manageableWorkflow(part, caller, params.id);
      // Rolled back with its entry: a rotate whose new token is never shown must not have killed the old one.
      return platform.audit.recordedBy(caller, "workflow.trigger.rotate", () => tokens.rotate(liveTrigger(workflow.id, params.triggerId).id), (issued) => ({
        target: issued.trigger.id,
        detail: { workflowId: workflow.id },
      }));
    })
    .delete("/:id/triggers/:triggerId", ({ params, caller }) => {
      const workflow = manageableWorkflow(part, caller, params.id);
      const trigger = platform.audit.recordedBy(caller, "workflow.trigger.revoke", () => part.triggers.revoke(liveTrigger(workflow.id, params.triggerId).id), (trigger) => ({
        target: trigger.id,
        detail: { workflowId: workflow.id },
      }));
      return { trigger };
    });
}
