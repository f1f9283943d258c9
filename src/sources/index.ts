/** Sources, the URI-policy evaluator, seeding of defaults. */
export { isInside } from "./paths.ts";
export { formatPerms, NONE, parsePerms, type Permissions } from "./permissions.ts";
export { applicableRules, effectivePermissions, normalizeSubpath, policyPaths, type PolicyRule, type PolicySubject } from "./policy.ts";
export { seedDefaultsOnFirstAttach } from "./seeding.ts";
export { HOST_TAB_SLUG, onTerminalPlane, SOURCE_KINDS, SourceStore, type NewSource, type Source, type SourceKind, type SourceRule } from "./source-store.ts";
export { sourceRoutes } from "./routes.ts";
