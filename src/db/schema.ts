import { sql } from "drizzle-orm";
import { blob, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/** Epoch milliseconds; every timestamp column uses it. */
const createdAt = () => integer("created_at").notNull().default(sql`(unixepoch('subsec') * 1000)`);

/** People who sign in. Passwords are argon2id hashes (Bun.password). */
export const users = sqliteTable("users", {
  id: text("id").primaryKey(),
  email: text("email").notNull().unique(),
  passwordHash: text("password_hash").notNull(),
  createdAt: createdAt(),
});

/** A tenant: members, roles, grants, agents, sources and workflows belong to one. */
export const projects = sqliteTable("projects", {
  id: text("id").primaryKey(),
  slug: text("slug").notNull().unique(),
  name: text("name").notNull(),
  createdAt: createdAt(),
});

/** Roles of a project: the five built-ins plus custom ones. */
export const roles = sqliteTable(
  "roles",
  {
    projectId: text("project_id").notNull().references(() => projects.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    builtin: integer("builtin", { mode: "boolean" }).notNull().default(false),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.name] })],
);

/** Feature grants per role; `*` is the owner's wildcard. */
export const roleFeatures = sqliteTable(
  "role_features",
  {
    projectId: text("project_id").notNull().references(() => projects.id, { onDelete: "cascade" }),
    role: text("role").notNull(),
    feature: text("feature").notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.role, t.feature] })],
);

/** Project membership: one role per member. */
export const members = sqliteTable(
  "members",
  {
    projectId: text("project_id").notNull().references(() => projects.id, { onDelete: "cascade" }),
    userId: text("user_id").notNull().references(() => users.id, { onDelete: "cascade" }),
    role: text("role").notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.userId] })],
);

/** A package-access feature: a role without it does not see the package at all. */
export const packageAccess = sqliteTable(
  "package_access",
  {
    projectId: text("project_id").notNull().references(() => projects.id, { onDelete: "cascade" }),
    packageSlug: text("package_slug").notNull(),
    feature: text("feature").notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.packageSlug] })],
);

/** Server-side login sessions; `id` is the SHA-256 of the cookie value, never the value. */
export const authSessions = sqliteTable(
  "auth_sessions",
  {
    id: text("id").primaryKey(),
    userId: text("user_id").notNull().references(() => users.id, { onDelete: "cascade" }),
    projectId: text("project_id"),
    createdAt: createdAt(),
    expiresAt: integer("expires_at").notNull(),
  },
  (t) => [index("auth_sessions_user").on(t.userId)],
);

/** Agents of a project; usable by their owner, and by every member when shared. */
export const agents = sqliteTable(
  "agents",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id").notNull().references(() => projects.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    ownerUserId: text("owner_user_id").notNull().references(() => users.id, { onDelete: "cascade" }),
    shared: integer("shared", { mode: "boolean" }).notNull().default(false),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("agents_project_name").on(t.projectId, t.name)],
);

/** Admin-editable platform settings, JSON-encoded values read at use time. */
export const settings = sqliteTable("settings", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

/** The platform audit log; every part writes through one writer. */
export const auditLog = sqliteTable(
  "audit_log",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    at: integer("at").notNull(),
    action: text("action").notNull(),
    userId: text("user_id"),
    projectId: text("project_id"),
    agentId: text("agent_id"),
    target: text("target"),
    detail: text("detail"),
  },
  (t) => [index("audit_project_at").on(t.projectId, t.at), index("audit_action_at").on(t.action, t.at)],
);

/** Secrets encrypted with AES-256-GCM; the plaintext never leaves `Secrets`. */
export const secrets = sqliteTable(
  "secrets",
  {
    scope: text("scope", { enum: ["user", "project"] }).notNull(),
    scopeId: text("scope_id").notNull(),
    id: text("id").notNull(),
    iv: blob("iv", { mode: "buffer" }).notNull(),
    ciphertext: blob("ciphertext", { mode: "buffer" }).notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.scopeId, t.id] })],
);

/** Sources a terminal tab (and the agent shell) can work in. `root` is an OS path for local and host kinds. */
export const sources = sqliteTable(
  "sources",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id").notNull().references(() => projects.id, { onDelete: "cascade" }),
    slug: text("slug").notNull(),
    label: text("label").notNull(),
    kind: text("kind", { enum: ["local", "host", "brain", "webtop"] }).notNull(),
    connector: text("connector").notNull(),
    root: text("root"),
    enabled: integer("enabled", { mode: "boolean" }).notNull().default(true),
    /** Whether the shell engine can cover the source right now (a stopped source cannot). */
    running: integer("running", { mode: "boolean" }).notNull().default(true),
    /** When the default per-role permissions were seeded (first attach), or null. */
    seededAt: integer("seeded_at"),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("sources_project_slug").on(t.projectId, t.slug)],
);

/** URI-policy rules: allow or deny r/w/x on a source (or a path below its root) to a role, a user or an agent. */
export const sourceRules = sqliteTable(
  "source_rules",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    sourceId: text("source_id").notNull().references(() => sources.id, { onDelete: "cascade" }),
    subjectKind: text("subject_kind", { enum: ["role", "user", "agent"] }).notNull(),
    subject: text("subject").notNull(),
    /** Path below the source root, "" for the whole source. Normalised, no leading or trailing slash. */
    path: text("path").notNull().default(""),
    effect: text("effect", { enum: ["allow", "deny"] }).notNull(),
    /** Any of r, w, x. */
    perms: text("perms").notNull(),
    /** Seeded defaults lose to explicit entries for the same subject. */
    seeded: integer("seeded", { mode: "boolean" }).notNull().default(false),
    createdAt: createdAt(),
  },
  (t) => [index("source_rules_source").on(t.sourceId)],
);
