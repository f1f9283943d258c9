/** The feature gates of hatch and their default grants. */

/** Every feature the product checks. Custom feature names (package-access features) are allowed too. */
export const FEATURES = {
  terminalRead: "terminal.read",
  coreExecute: "core.execute",
  terminalContainer: "terminal.container",
  terminalNative: "terminal.native",
  terminalSupervise: "terminal.supervise",
  channelsConnect: "channels.connect",
  channelsManage: "channels.manage",
  execUnconfined: "exec.unconfined",
  workflowsManage: "workflows.manage",
} as const;

/**
 * The package that owns the agent runtime and its surfaces: the terminal, chat,
 * calendar and workflows (its routes live under /api/packages/agent). A
 * package-access feature attached to it hides them together.
 */
export const AGENT_PACKAGE = "agent";

/** The packages hatch serves: package access can be set only on one of them. */
export const PACKAGES: readonly string[] = [AGENT_PACKAGE];

/** The owner's grant: every feature, present and future. */
export const WILDCARD = "*";

/** Roles every project starts with, most powerful first. */
export const BUILTIN_ROLES = ["owner", "admin", "manager", "member", "viewer"] as const;
export type BuiltinRole = (typeof BUILTIN_ROLES)[number];

/**
 * Default grants, exactly as the specification lists them. Viewers and new
 * custom roles start with none; `exec.unconfined` is granted to nobody.
 * `workflows.manage` (hatch's own gate for managing every workflow of a project)
 * is an owner/admin power; members manage the workflows they created.
 */
export const DEFAULT_GRANTS: Record<BuiltinRole, readonly string[]> = {
  owner: [WILDCARD],
  admin: [
    FEATURES.terminalRead,
    FEATURES.terminalContainer,
    FEATURES.terminalNative,
    FEATURES.terminalSupervise,
    FEATURES.channelsConnect,
    FEATURES.channelsManage,
    FEATURES.workflowsManage,
  ],
  manager: [FEATURES.terminalRead, FEATURES.coreExecute, FEATURES.channelsConnect],
  member: [FEATURES.terminalRead, FEATURES.coreExecute, FEATURES.channelsConnect],
  viewer: [],
};

const FEATURE_NAME = /^(\*|[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)*)$/;
const ROLE_NAME = /^[a-z][a-z0-9_-]{0,39}$/;

/** Whether a string may name a feature. */
export function isFeatureName(name: string): boolean {
  return name.length <= 64 && FEATURE_NAME.test(name);
}

/** Whether a string may name a role. */
export function isRoleName(name: string): boolean {
  return ROLE_NAME.test(name);
}

/** Whether a grant set unlocks `feature` (the wildcard unlocks all). */
export function hasFeature(grants: ReadonlySet<string>, feature: string): boolean {
  return grants.has(WILDCARD) || grants.has(feature);
}
