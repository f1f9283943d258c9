/** The platform: users, login sessions, projects, roles, features, agents, settings, audit, secrets. */
export { Agents, type Agent } from "./agents.ts";
export { Audit, type AuditEntry, type AuditEntryInput } from "./audit.ts";
export { AuthSessions, SESSION_COOKIE, sessionTokenOf } from "./auth-sessions.ts";
export { CallerResolver, can, isAdminRole, isProjectAdmin, requireFeature, requireProjectAdmin, routeNotFound, type Caller, type ProjectCaller } from "./caller.ts";
export { type Clock, systemClock } from "./clock.ts";
export { isCrossOriginRequest } from "./cross-origin.ts";
export { HatchError, badRequest, conflict, forbidden, notFound, requireObjectBody, tooMany, unauthorized } from "./errors.ts";
export { AGENT_PACKAGE, BUILTIN_ROLES, DEFAULT_GRANTS, FEATURES, WILDCARD, hasFeature, isFeatureName } from "./features.ts";
export { constantTimeEqual, newId, randomToken, sha256Hex } from "./ids.ts";
export { createPlatform, type Platform, type PlatformOptions } from "./platform.ts";
export { Projects, type Project } from "./projects.ts";
export { Roles } from "./roles.ts";
export { platformRoutes } from "./routes.ts";
export { loadSecretKey, SECRET_KEY_FILE } from "./secret-key.ts";
export { Secrets, type SecretScope } from "./secrets.ts";
export { SETTINGS, Settings, type SettingKey } from "./settings.ts";
export { Users, type User } from "./users.ts";
