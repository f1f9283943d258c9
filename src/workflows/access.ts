import { AGENT_PACKAGE, can, FEATURES, forbidden, hasFeature, isAdminRole, notFound, type Platform, type Project, type ProjectCaller, type User } from "../platform/index.ts";
import type { RunnerSettings, Workflow } from "./workflow.ts";

/**
 * The feature a workflow's creator needs for its runs: both runners do work on
 * the project's behalf (a command on the server, or model spend), which is what
 * `core.execute` grants to members.
 */
export const RUN_FEATURE = FEATURES.coreExecute;

/** Whether the caller manages every workflow of the project (owners, admins: `workflows.manage`). */
export function managesAll(caller: ProjectCaller): boolean {
  return can(caller, FEATURES.workflowsManage);
}

/** 403 unless the caller may manage at least their own workflows. */
export function requireWorkflowAccess(caller: ProjectCaller): void {
  if (!managesAll(caller) && !can(caller, RUN_FEATURE)) {
    throw forbidden("feature_required", `Managing workflows needs the feature "${RUN_FEATURE}" (own) or "${FEATURES.workflowsManage}" (all)`);
  }
}

/** 403 unless the caller may create a workflow: its runs will execute as them, so they need what runs need. */
export function requireCreateAccess(caller: ProjectCaller): void {
  if (!can(caller, RUN_FEATURE)) throw forbidden("feature_required", `Creating a workflow needs the feature "${RUN_FEATURE}": its runs execute as you`);
}

/**
 * 403 unless the caller may name the runner's project secret. An `openai`
 * runner sends its API key to a base URL its creator chooses, which is as good
 * as reading the secret, and reading project secrets is for owners and admins.
 */
export function requireSecretAccess(caller: ProjectCaller, runner: Pick<RunnerSettings, "kind">): void {
  if (runner.kind === "openai" && !isAdminRole(caller.role)) {
    throw forbidden("secret_access_required", "An openai workflow sends a project secret to its base URL: only project owners and admins may create one");
  }
}

/** 404, exactly like an unknown workflow, unless the caller manages this one (their own, or all). */
export function requireManageable(caller: ProjectCaller, workflow: Workflow): Workflow {
  requireWorkflowAccess(caller);
  const own = workflow.createdBy === caller.user.id && can(caller, RUN_FEATURE);
  if (workflow.projectId !== caller.project.id || !(own || managesAll(caller))) {
    throw notFound("workflow_not_found", `Cannot find workflow "${workflow.id}"`);
  }
  return workflow;
}

/** Why a fire is refused because its workflow's creator could not run it now. */
export interface CreatorFireRefusal {
  code: "creator_not_member" | "creator_not_permitted";
  /** Ends "Workflow "…" does not fire: ". */
  reason: string;
}

/**
 * Whether the creator could run the workflow now, asked at fire time: what
 * `resolveRunAs` checks at each run's start, read from the fire target. A fire
 * whose run would fail is refused itself, so a schedule or a leaked token
 * cannot fill the project's day with failed runs that spend its budget. The
 * agent package hidden from the creator's role refuses only a `scheduled`
 * fire: other fires are taken and end `package-off`, which a chat (or the
 * caller reading the run) is told about; a schedule has nobody to tell, and
 * would spend the project's runs per day on runs that cannot work. Null
 * when they could.
 */
export function creatorFireRefusal(
  platform: Pick<Platform, "projects" | "roles">,
  target: Pick<Workflow, "projectId" | "createdBy"> & { runnerKind: RunnerSettings["kind"] },
  { scheduled = false }: { scheduled?: boolean } = {},
): CreatorFireRefusal | null {
  const role = platform.projects.roleOf(target.projectId, target.createdBy);
  if (!role) return { code: "creator_not_member", reason: "its creator is no longer a member of the project" };
  const features = platform.roles.featuresOf(target.projectId, role);
  if (!hasFeature(features, RUN_FEATURE)) {
    return { code: "creator_not_permitted", reason: `its creator's role "${role}" lacks the feature "${RUN_FEATURE}" its runs need` };
  }
  if (target.runnerKind === "openai" && !isAdminRole(role)) {
    return { code: "creator_not_permitted", reason: `its creator's role "${role}" is not a project owner's or admin's, which the openai runner needs` };
  }
  if (scheduled && !platform.roles.packageVisible(target.projectId, AGENT_PACKAGE, features)) {
    return { code: "creator_not_permitted", reason: `the ${AGENT_PACKAGE} package is switched off for its creator's role "${role}"` };
  }
  return null;
}

/** Who a run executes as, resolved when it starts; or why it cannot run. */
export type RunAs = { ok: true; user: User; role: string } | { ok: false; error: string };

/**
 * Re-resolve the creator's membership, role and features at run time, so a
 * removed member or a revoked grant stops their workflows at the next run (and
 * a creator no longer owner or admin stops an `openai` runner revealing its secret).
 */
export function resolveRunAs(platform: Pick<Platform, "users" | "projects" | "roles">, workflow: Workflow): RunAs {
  const user = platform.users.get(workflow.createdBy);
  if (!user) return { ok: false, error: `The workflow's creator (user "${workflow.createdBy}") no longer exists` };
  const role = platform.projects.roleOf(workflow.projectId, user.id);
  if (!role) return { ok: false, error: `The workflow's creator "${user.email}" is no longer a member of the project` };
  if (!hasFeature(platform.roles.featuresOf(workflow.projectId, role), RUN_FEATURE)) {
    return { ok: false, error: `The workflow's creator "${user.email}" (role "${role}") lacks the feature "${RUN_FEATURE}" the ${workflow.runner.kind} runner needs` };
  }
  if (workflow.runner.kind === "openai" && !isAdminRole(role)) {
    return { ok: false, error: `The workflow's creator "${user.email}" (role "${role}") is no longer a project owner or admin, so the openai runner may not use the project secret` };
  }
  return { ok: true, user, role };
}

/**
 * 403 unless `user` can be the creator of a workflow with this runner now: a
 * member of the project whose role holds `core.execute` and sees the agent
 * package, and an owner or admin for an `openai` runner. These are what every
 * run checks at its start, so a workflow is never handed to someone whose runs
 * would all fail or be cancelled.
 */
export function requireRunnableCreator(platform: Pick<Platform, "projects" | "roles">, project: Pick<Project, "id" | "slug">, user: User, runner: Pick<RunnerSettings, "kind">): void {
  const role = platform.projects.roleOf(project.id, user.id);
  if (!role) throw forbidden("not_a_member", `${user.email} is not a member of ${project.slug}`);
  const features = platform.roles.featuresOf(project.id, role);
  if (!hasFeature(features, RUN_FEATURE)) {
    throw forbidden("feature_required", `${user.email} (role ${role}) lacks the feature ${RUN_FEATURE}, and the workflow's runs would execute as them`);
  }
  // Every run would be cancelled package-off, as the creator's own workflow routes answer 404.
  if (!platform.roles.packageVisible(project.id, AGENT_PACKAGE, features)) {
    throw forbidden("package_hidden", `${user.email} (role ${role}) cannot use the ${AGENT_PACKAGE} package, and the workflow's runs would execute as them`);
  }
  if (runner.kind === "openai" && !isAdminRole(role)) {
    throw forbidden("secret_access_required", `${user.email} (role ${role}) is not a project owner or admin, and an openai workflow sends a project secret to its base URL`);
  }
}
