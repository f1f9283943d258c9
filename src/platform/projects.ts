import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../db/index.ts";
import { members, projects, roleFeatures, roles } from "../db/index.ts";
import type { AccessChanges } from "./access-changes.ts";
import { badRequest, conflict, notFound } from "./errors.ts";
import { BUILTIN_ROLES, DEFAULT_GRANTS } from "./features.ts";
import { newId } from "./ids.ts";
import { isOneLineText } from "./one-line-text.ts";

/** A project as the API shows it. */
export interface Project {
  id: string;
  slug: string;
  name: string;
  createdAt: number;
}

/** A membership: which role a user holds in a project. */
export interface Membership {
  project: Project;
  role: string;
}

const SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** Projects and their members. Creating a project seeds its roles and default grants. */
export class Projects {
  /** Prepared once: every request reads its project and its caller's role. */
  readonly #byId;
  readonly #roleOf;

  constructor(
    private readonly db: Db,
    private readonly changes: AccessChanges,
  ) {
    this.#byId = db.select().from(projects).where(eq(projects.id, sql.placeholder("id"))).prepare();
    this.#roleOf = db
      .select({ role: members.role })
      .from(members)
      .where(and(eq(members.projectId, sql.placeholder("projectId")), eq(members.userId, sql.placeholder("userId"))))
      .prepare();
  }

  /** Create a project owned by `ownerUserId`, with the built-in roles and their default grants. */
  create(slug: string, name: string, ownerUserId: string): Project {
    if (!SLUG.test(slug)) throw badRequest("invalid_slug", `Cannot create project: "${slug}" is not a valid slug (a-z, 0-9, -)`);
    if (!name.trim()) throw badRequest("invalid_name", "Cannot create project: the name is empty");
    if (!isOneLineText(name)) throw badRequest("invalid_name", "Cannot create project: the name must be one line, without control or bidirectional-override characters");
    if (this.bySlug(slug)) throw conflict("project_exists", `Cannot create project: "${slug}" already exists`);
    const project = { id: newId(), slug, name: name.trim(), createdAt: Date.now() };
    this.db.transaction((tx) => {
      tx.insert(projects).values(project).run();
      for (const role of BUILTIN_ROLES) {
        tx.insert(roles).values({ projectId: project.id, name: role, builtin: true }).run();
        for (const feature of DEFAULT_GRANTS[role]) {
          tx.insert(roleFeatures).values({ projectId: project.id, role, feature }).run();
        }
      }
      tx.insert(members).values({ projectId: project.id, userId: ownerUserId, role: "owner", createdAt: Date.now() }).run();
    });
    return project;
  }

  /** The project with this id, or null. */
  get(id: string): Project | null {
    return this.#byId.get({ id }) ?? null;
  }

  /** The project with this slug, or null. */
  bySlug(slug: string): Project | null {
    return this.db.select().from(projects).where(eq(projects.slug, slug)).get() ?? null;
  }

  /** The project with this slug, or a 404 naming it. */
  requireBySlug(slug: string): Project {
    const project = this.bySlug(slug);
    if (!project) throw notFound("project_not_found", `Cannot find project "${slug}"`);
    return project;
  }

  /** Add a user to a project (or change their role) with an existing role. */
  setMember(projectId: string, userId: string, role: string): void {
    const known = this.db.select().from(roles).where(and(eq(roles.projectId, projectId), eq(roles.name, role))).get();
    if (!known) throw badRequest("unknown_role", `Cannot add member: the project has no role "${role}"`);
    // IMMEDIATE, as removeMember: a demotion and a removal of the two owners at once must not each count the other and leave none.
    this.db.transaction(
      (tx) => {
        // Only an owner grants roles the admin role lacks or attaches package access: a project without one is stuck.
        if (role !== "owner" && this.roleOf(projectId, userId) === "owner" && this.#ownerCount(projectId) === 1) {
          throw conflict("last_owner", "Cannot change the role of the project's only owner: make another member owner first");
        }
        tx.insert(members)
          .values({ projectId, userId, role, createdAt: Date.now() })
          .onConflictDoUpdate({ target: [members.projectId, members.userId], set: { role } })
          .run();
      },
      { behavior: "immediate" },
    );
    this.changes.notify({ projectId });
  }

  /**
   * Remove a user from a project; returns the role they held, or null when
   * they were not a member. Nothing else they have in the project is touched:
   * every check re-reads membership, so what they held stops working.
   *
   * @example
   * if (projects.removeMember(project.id, user.id) === null) throw forbidden("not_a_member", "...");
   */
  removeMember(projectId: string, userId: string): string | null {
    // IMMEDIATE: two removals at once (two CLI processes) must not each count the other owner and leave none.
    const removed = this.db.transaction(
      (tx) => {
        const role = this.roleOf(projectId, userId);
        if (role === null) return null;
        // As for a demotion: only an owner grants what the admin role lacks, so a project without one is stuck.
        if (role === "owner" && this.#ownerCount(projectId) === 1) {
          throw conflict("last_owner", "Cannot remove the project's only owner: make another member owner first");
        }
        tx.delete(members).where(and(eq(members.projectId, projectId), eq(members.userId, userId))).run();
        return role;
      },
      { behavior: "immediate" },
    );
    if (removed !== null) this.changes.notify({ projectId });
    return removed;
  }

  #ownerCount(projectId: string): number {
    return this.db.select({ n: sql<number>`count(*)` }).from(members).where(and(eq(members.projectId, projectId), eq(members.role, "owner"))).get()!.n;
  }

  /** The role a user holds in a project, or null when not a member. */
  roleOf(projectId: string, userId: string): string | null {
    return this.#roleOf.get({ projectId, userId })?.role ?? null;
  }

  /** Every project a user belongs to, with the role held there: the one joined first first (a login starts in it). */
  membershipsOf(userId: string): Membership[] {
    return this.db
      .select({ project: projects, role: members.role })
      .from(members)
      .innerJoin(projects, eq(members.projectId, projects.id))
      .where(eq(members.userId, userId))
      .orderBy(members.createdAt, projects.slug)
      .all();
  }

  /** User ids of members holding one of `roleNames`. */
  membersWithRoles(projectId: string, roleNames: readonly string[]): { userId: string; role: string }[] {
    return this.db
      .select({ userId: members.userId, role: members.role })
      .from(members)
      .where(eq(members.projectId, projectId))
      .all()
      .filter((m) => roleNames.includes(m.role));
  }
}
