import { Elysia, t } from "elysia";
import { badRequest, parseJsonRequest, requireJsonBody, requireObjectBody, requireProjectAdmin, sessionTokenOf, type Platform } from "../platform/index.ts";
import { MAX_CONNECTOR_LENGTH, MAX_LABEL_LENGTH, MAX_PATH_LENGTH, MAX_SUBJECT_LENGTH, SOURCE_KINDS, type Source, type SourceStore } from "./source-store.ts";

/** Collaborators of the source routes. */
export interface SourceRoutesOptions {
  platform: Platform;
  store: SourceStore;
}

const Kind = t.Union(SOURCE_KINDS.map((k) => t.Literal(k)));

/** Owners and admins manage the project's sources and their URI-policy rules under /api/sources. */
export function sourceRoutes(options: SourceRoutesOptions) {
  const { platform, store } = options;
  return new Elysia({ name: "source-routes", prefix: "/api/sources" })
    // derive, not resolve: Elysia runs derive before it validates the body, so only an admin learns what a body needs.
    .derive(async ({ request }) => {
      const caller = await platform.callers.resolveInProject(sessionTokenOf(request.headers.get("cookie")));
      requireProjectAdmin(caller);
      return { caller };
    })
    .onParse(parseJsonRequest)
    .onTransform(requireJsonBody)
    .get("/", ({ caller }) => ({ sources: store.list(caller.project.id) }))
    .post(
      "/",
      ({ caller, body, set }) => {
        const source = platform.audit.recordedBy(caller, "source.add", () => store.add(caller.project.id, body), (added) => ({ target: added.slug, detail: { kind: added.kind, root: added.root } }));
        set.status = 201;
        return source;
      },
      {
        body: t.Object({
          slug: t.String({ maxLength: 63 }),
          kind: Kind,
          root: t.Optional(t.String({ maxLength: MAX_PATH_LENGTH })),
          label: t.Optional(t.String({ maxLength: MAX_LABEL_LENGTH })),
          connector: t.Optional(t.String({ maxLength: MAX_CONNECTOR_LENGTH })),
        }),
      },
    )
    .patch(
      "/:slug",
      ({ caller, params, body }) => {
        const change = () => {
          const before = store.require(caller.project.id, params.slug);
          let source = before;
          if (body.enabled !== undefined) source = store.setEnabled(caller.project.id, params.slug, body.enabled);
          if (body.running !== undefined) source = store.setRunning(caller.project.id, params.slug, body.running);
          return { source, changed: changedFlags(before, source) };
        };
        // A PATCH that changes nothing ({} or the values it already has) writes no entry.
        const { source } = platform.audit.recordedBy(caller, "source.update", change, ({ source, changed }) => (changed ? { target: source.slug, detail: changed } : null));
        return source;
      },
      { body: t.Object({ enabled: t.Optional(t.Boolean()), running: t.Optional(t.Boolean()) }), transform: requireObjectBody },
    )
    .get("/:slug/rules", ({ caller, params }) => ({ rules: store.rules(store.require(caller.project.id, params.slug).id) }))
    .post(
      "/:slug/rules",
      ({ caller, params, body, set }) => {
        const source = store.require(caller.project.id, params.slug);
        if (!subjectExists(platform, caller.project.id, body.subjectKind, body.subject)) {
          throw badRequest("unknown_subject", `Cannot add rule: the project has no ${body.subjectKind} "${body.subject}"`);
        }
        const rule = platform.audit.recordedBy(caller, "source.rule", () => store.addRule(source, body), (rule) => ({
          target: source.slug,
          // The id, as `source.rule.remove` gives it, so an add and its removal can be matched in the log.
          detail: { id: rule.id, subjectKind: rule.subjectKind, subject: rule.subject, path: rule.path, effect: rule.effect, perms: rule.perms },
        }));
        set.status = 201;
        return rule;
      },
      {
        body: t.Object({
          subjectKind: t.Union([t.Literal("role"), t.Literal("user"), t.Literal("agent")]),
          subject: t.String({ minLength: 1, maxLength: MAX_SUBJECT_LENGTH }),
          path: t.Optional(t.String({ maxLength: MAX_PATH_LENGTH })),
          effect: t.Union([t.Literal("allow"), t.Literal("deny")]),
          perms: t.String({ maxLength: 3 }),
        }),
      },
    )
    .delete(
      "/:slug/rules/:ruleId",
      ({ caller, params }) => {
        const source = store.require(caller.project.id, params.slug);
        return platform.audit.recordedBy(caller, "source.rule.remove", () => store.removeRule(source, params.ruleId), (rule) => ({
          target: source.slug,
          detail: { id: rule.id, subjectKind: rule.subjectKind, subject: rule.subject, path: rule.path, effect: rule.effect, perms: rule.perms },
        }));
      },
      { params: t.Object({ slug: t.String(), ruleId: t.Numeric({ minimum: 1, multipleOf: 1, title: "ruleId" }) }) },
    );
}

/** The flags a source update changed, with their new values; null when it changed none. */
function changedFlags(before: Source, after: Source): Partial<Pick<Source, "enabled" | "running">> | null {
  const changed = {
    ...(before.enabled !== after.enabled && { enabled: after.enabled }),
    ...(before.running !== after.running && { running: after.running }),
  };
  return Object.keys(changed).length > 0 ? changed : null;
}

/**
 * Whether a rule's subject names a role of the project, a member of it (by
 * user id) or an agent of it (by id). A rule for anything else never applies,
 * so a deny for "Member" or for an email would be stored and silently do
 * nothing; and a user of another project answers as no user at all.
 */
function subjectExists(platform: Platform, projectId: string, kind: "role" | "user" | "agent", subject: string): boolean {
  if (kind === "role") return platform.roles.list(projectId).some((role) => role.name === subject);
  if (kind === "user") return platform.projects.roleOf(projectId, subject) !== null;
  return platform.agents.get(projectId, subject) !== null;
}
