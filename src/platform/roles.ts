import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../db/index.ts";
import { packageAccess, roleFeatures, roles } from "../db/index.ts";
import type { AccessChanges } from "./access-changes.ts";
import { badRequest, conflict, forbidden, notFound } from "./errors.ts";
import { FEATURES, hasFeature, isFeatureName, isRoleName, PACKAGES, WILDCARD } from "./features.ts";

/** A role with its grants. */
export interface RoleGrants {
  name: string;
  builtin: boolean;
  features: string[];
}

/** Roles, their feature grants, and package-access features of a project. */
export class Roles {
  /** Prepared once: every request reads its caller's grants and the package's access feature. */
  readonly #grants;
  readonly #accessFeature;

  constructor(
    private readonly db: Db,
    private readonly changes: AccessChanges,
  ) {
    this.#grants = db
      .select({ feature: roleFeatures.feature })
      .from(roleFeatures)
      .where(and(eq(roleFeatures.projectId, sql.placeholder("projectId")), eq(roleFeatures.role, sql.placeholder("role"))))
      .prepare();
    this.#accessFeature = db
      .select({ feature: packageAccess.feature })
      .from(packageAccess)
      .where(and(eq(packageAccess.projectId, sql.placeholder("projectId")), eq(packageAccess.packageSlug, sql.placeholder("packageSlug"))))
      .prepare();
  }

  /** Create a custom role; it starts with no features. */
  add(projectId: string, name: string): RoleGrants {
    if (!isRoleName(name)) throw badRequest("invalid_role", `Cannot add role: "${name}" is not a valid role name`);
    if (this.#exists(projectId, name)) throw conflict("role_exists", `Cannot add role: "${name}" already exists`);
    this.db.insert(roles).values({ projectId, name, builtin: false }).run();
    return { name, builtin: false, features: [] };
  }

  /** Every role of a project with its grants. */
  list(projectId: string): RoleGrants[] {
    const grants = this.db.select().from(roleFeatures).where(eq(roleFeatures.projectId, projectId)).all();
    return this.db
      .select()
      .from(roles)
      .where(eq(roles.projectId, projectId))
      .all()
      .map((r) => ({
        name: r.name,
        builtin: r.builtin,
        features: grants.filter((g) => g.role === r.name).map((g) => g.feature).sort(),
      }));
  }

  /**
   * Grant a feature to a role (idempotent: false when the role held it
   * already). `grantor` is the grants of the member asking, when one does
   * (the CLI on the server is the operator and passes none): they may only
   * hand out a feature they hold themselves.
   */
  grant(projectId: string, role: string, feature: string, grantor?: ReadonlySet<string>): boolean {
    this.#requireRole(projectId, role);
    if (!isFeatureName(feature)) throw badRequest("invalid_feature", `Cannot grant: "${feature}" is not a valid feature name`);
    // The wildcard is the owner's alone (every feature, exec.unconfined included): an admin granting it would outrank themselves.
    if (feature === WILDCARD) throw forbidden("wildcard_owner_only", `Cannot grant "${WILDCARD}": only the owner role holds every feature; grant features by name`);
    requireHeld(grantor, feature, "grant");
    requireCombinationHeld(grantor, role, feature, this.featuresOf(projectId, role));
    const granted = this.db.insert(roleFeatures).values({ projectId, role, feature }).onConflictDoNothing().returning({ feature: roleFeatures.feature }).all().length > 0;
    if (granted) this.changes.notify({ projectId });
    return granted;
  }

  /** Take a feature away from a role (idempotent: false when it did not hold it); `grantor` as for `grant`. */
  revoke(projectId: string, role: string, feature: string, grantor?: ReadonlySet<string>): boolean {
    this.#requireRole(projectId, role);
    // What no grant can be is refused as its grant is, not answered (and audited) as a revoke that happened.
    if (!isFeatureName(feature)) throw badRequest("invalid_feature", `Cannot revoke: "${feature}" is not a valid feature name`);
    if (feature === WILDCARD) throw forbidden("wildcard_owner_only", `Cannot revoke "${WILDCARD}": only the owner role holds every feature, and it always does`);
    requireHeld(grantor, feature, "revoke");
    const revoked =
      this.db
        .delete(roleFeatures)
        .where(and(eq(roleFeatures.projectId, projectId), eq(roleFeatures.role, role), eq(roleFeatures.feature, feature)))
        .returning({ feature: roleFeatures.feature })
        .all().length > 0;
    if (revoked) this.changes.notify({ projectId });
    return revoked;
  }

  /** The features granted to a role. */
  featuresOf(projectId: string, role: string): Set<string> {
    return new Set(this.#grants.all({ projectId, role }).map((r) => r.feature));
  }

  /** Attach a package-access feature: roles without it no longer see the package. */
  setPackageAccess(projectId: string, packageSlug: string, feature: string): void {
    requirePackage(packageSlug);
    if (!isFeatureName(feature)) throw badRequest("invalid_feature", `Cannot set package access: "${feature}" is not a valid feature name`);
    this.db
      .insert(packageAccess)
      .values({ projectId, packageSlug, feature })
      .onConflictDoUpdate({ target: [packageAccess.projectId, packageAccess.packageSlug], set: { feature } })
      .run();
    this.changes.notify({ projectId });
  }

  /** Detach the package-access feature: every role sees the package again. */
  clearPackageAccess(projectId: string, packageSlug: string): void {
    requirePackage(packageSlug);
    this.db
      .delete(packageAccess)
      .where(and(eq(packageAccess.projectId, projectId), eq(packageAccess.packageSlug, packageSlug)))
      .run();
    this.changes.notify({ projectId });
  }

  /** Whether grants see a package: none of its features is attached, or the grants hold it. */
  packageVisible(projectId: string, packageSlug: string, grants: ReadonlySet<string>): boolean {
    const feature = this.packageAccessFeature(projectId, packageSlug);
    return feature === null || hasFeature(grants, feature);
  }

  /** The package-access feature of a package hatch serves (null: open to every role); an unknown package is 404. */
  packageAccessOf(projectId: string, packageSlug: string): string | null {
    requirePackage(packageSlug);
    return this.packageAccessFeature(projectId, packageSlug);
  }

  /** The feature guarding a package, or null when the package is open to every role. */
  packageAccessFeature(projectId: string, packageSlug: string): string | null {
    return this.#accessFeature.get({ projectId, packageSlug })?.feature ?? null;
  }

  #exists(projectId: string, name: string): boolean {
    return !!this.db.select().from(roles).where(and(eq(roles.projectId, projectId), eq(roles.name, name))).get();
  }

  #requireRole(projectId: string, name: string): void {
    if (!this.#exists(projectId, name)) throw notFound("role_not_found", `Cannot find role "${name}"`);
  }
}

/**
 * 403 unless the grantor holds the feature. Granting beyond one's own role
 * would let an admin hand another role a power the owner gave nobody, such as
 * exec.unconfined, and escalate through it; revoking is held to the same
 * rule, so an admin cannot take away what they could not give back. The owner
 * holds the wildcard, so they may grant and revoke everything grantable.
 */
function requireHeld(grantor: ReadonlySet<string> | undefined, feature: string, action: "grant" | "revoke"): void {
  if (grantor && !hasFeature(grantor, feature)) {
    throw forbidden("feature_not_held", `Cannot ${action} "${feature}": your role does not hold it; only the owner grants and revokes features beyond their own role`);
  }
}

/**
 * Features that are trusted-operator powers once the role can also run
 * commands (core.execute): Container Root and native tabs run unconfined, and
 * a supervisor that may type drives other members' sessions under their
 * authority. The admin role holds them without core.execute (it watches,
 * terminates and opens, but runs nothing), so an admin handing one to a role
 * that executes would grant more than the admin role itself can do.
 */
const POWERS_WITH_EXECUTE: readonly string[] = [FEATURES.terminalContainer, FEATURES.terminalNative, FEATURES.terminalSupervise];

/**
 * 403 unless the grantor's own role holds the combination the grant makes: a
 * role left holding core.execute with one of POWERS_WITH_EXECUTE needs a
 * grantor holding both (the owner, or an admin the owner gave core.execute).
 */
function requireCombinationHeld(grantor: ReadonlySet<string> | undefined, role: string, feature: string, before: ReadonlySet<string>): void {
  if (!grantor) return;
  const after = new Set([...before, feature]);
  if (!hasFeature(after, FEATURES.coreExecute)) return;
  const power = POWERS_WITH_EXECUTE.find((p) => hasFeature(after, p) && (!hasFeature(grantor, p) || !hasFeature(grantor, FEATURES.coreExecute)));
  if (power === undefined) return;
  throw forbidden(
    "combination_not_held",
    `Cannot grant "${feature}" to ${role}: ${role} would hold ${power} with ${FEATURES.coreExecute}, which runs commands unconfined or in other members' sessions, and your role does not hold both; only the owner grants that`,
  );
}

/** A misspelt package would store a rule that hides nothing while its owner believes it hidden. */
function requirePackage(packageSlug: string): void {
  if (!PACKAGES.includes(packageSlug)) {
    throw notFound("package_not_found", `Cannot find package "${packageSlug}": hatch serves ${PACKAGES.map((p) => `"${p}"`).join(", ")}`);
  }
}
