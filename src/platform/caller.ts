import type { Agents } from "./agents.ts";
import type { AuthSessions } from "./auth-sessions.ts";
import { forbidden, notFound, unauthorized } from "./errors.ts";
import { hasFeature } from "./features.ts";
import type { Project, Projects } from "./projects.ts";
import type { Roles } from "./roles.ts";
import type { User, Users } from "./users.ts";

/** Who is calling: resolved from the session cookie on every request, never from client fields. */
export interface Caller {
  user: User;
  sessionId: string;
  /** The active project, or null when the user belongs to none. */
  project: Project | null;
  role: string | null;
  features: ReadonlySet<string>;
}

/** A caller with an active project. */
export interface ProjectCaller extends Caller {
  project: Project;
  role: string;
}

/** The caller as one with an active project; 403 `no_project` when they have none. */
export function inProject(caller: Caller): ProjectCaller {
  if (!caller.project || !caller.role) throw forbidden("no_project", "Choose a project first: you are not a member of an active project");
  return caller as ProjectCaller;
}

/** Resolves cookies to callers and answers the permission questions every route asks. */
export class CallerResolver {
  constructor(
    private readonly deps: { users: Users; sessions: AuthSessions; projects: Projects; roles: Roles; agents: Agents },
  ) {}

  /** The caller behind a cookie value; 401 when there is none. */
  async resolve(token: string | undefined): Promise<Caller> {
    const session = await this.deps.sessions.resolve(token);
    const user = session && this.deps.users.get(session.userId);
    if (!session || !user) throw unauthorized();
    // Membership is re-read every time: a removed member loses access at once.
    const role = session.projectId ? this.deps.projects.roleOf(session.projectId, user.id) : null;
    const project = role && session.projectId ? this.deps.projects.get(session.projectId) : null;
    const features = project && role ? this.deps.roles.featuresOf(project.id, role) : new Set<string>();
    return { user, sessionId: session.id, project, role: project ? role : null, features };
  }

  /** The caller, who must have an active project. */
  async resolveInProject(token: string | undefined): Promise<ProjectCaller> {
    return inProject(await this.resolve(token));
  }

  /**
   * A member of `project` as a caller, for checks made on their behalf (a
   * supervisor acting on their session is held to their current policy).
   * Null when the user is gone or no longer a member. Not signed in: `sessionId` is empty.
   */
  member(project: Project, userId: string): ProjectCaller | null {
    const user = this.deps.users.get(userId);
    const role = user && this.deps.projects.roleOf(project.id, userId);
    if (!user || !role) return null;
    return { user, sessionId: "", project, role, features: this.deps.roles.featuresOf(project.id, role) };
  }

  /**
   * Is the package visible to this caller? A package-access feature attached by
   * the owner hides every surface of the package from roles without it.
   */
  packageVisible(caller: ProjectCaller, packageSlug: string): boolean {
    return this.deps.roles.packageVisible(caller.project.id, packageSlug, caller.features);
  }

  /** Throw 404 exactly like an unknown route when the package is hidden. */
  requirePackage(caller: ProjectCaller, packageSlug: string): void {
    if (!this.packageVisible(caller, packageSlug)) throw routeNotFound();
  }
}

/** Whether the caller holds a feature. */
export function can(caller: Caller, feature: string): boolean {
  return hasFeature(caller.features, feature);
}

/** Throw 403 naming the missing feature. */
export function requireFeature(caller: Caller, feature: string): void {
  if (!can(caller, feature)) throw forbidden("feature_required", `This needs the feature "${feature}"`);
}

/** Owners and admins administer a project. */
export function isProjectAdmin(caller: Caller): boolean {
  return isAdminRole(caller.role);
}

/** Whether a role is an owner's or an admin's: the roles that read and write project secrets. */
export function isAdminRole(role: string | null): boolean {
  return role === "owner" || role === "admin";
}

/** Throw 403 unless the caller is an owner or admin. */
export function requireProjectAdmin(caller: Caller): void {
  if (!isProjectAdmin(caller)) throw forbidden("admin_required", "Only project owners and admins can do this");
}

/** The answer for an unknown route; reused wherever a resource must look absent. */
export function routeNotFound() {
  return notFound("not_found", "Not found");
}
