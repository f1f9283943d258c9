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

/** Server-wide values of the platform settings (the operator's, by the CLI), JSON-encoded, read at use time. */
export const settings = sqliteTable("settings", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

/** A project's own values of the platform settings (its owners' and admins'), over the server-wide ones. */
export const projectSettings = sqliteTable(
  "project_settings",
  {
    projectId: text("project_id").notNull().references(() => projects.id, { onDelete: "cascade" }),
    key: text("key").notNull(),
    value: text("value").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.key] })],
);

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
  // Pages are read newest first by id within a project or an action: ordered so, a page costs its rows, not a sort of the whole log.
  (t) => [index("audit_project_id").on(t.projectId, t.id), index("audit_action_id").on(t.action, t.id)],
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

/**
 * One known value sealed with the secret key: opening it at start proves the
 * key is the one the stored secrets were sealed with (one row, id 1).
 */
export const secretKeyCheck = sqliteTable("secret_key_check", {
  id: integer("id").primaryKey(),
  iv: blob("iv", { mode: "buffer" }).notNull(),
  ciphertext: blob("ciphertext", { mode: "buffer" }).notNull(),
  createdAt: createdAt(),
});

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

/**
 * Workflows of a project. `created_by` deliberately has no foreign key: a run
 * executes as its creator, so a creator who is gone must make the run fail with
 * a clear error on the row, not make the workflow silently vanish.
 */
export const workflows = sqliteTable(
  "workflows",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id").notNull().references(() => projects.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    instruction: text("instruction").notNull(),
    runner: text("runner", { enum: ["command", "openai"] }).notNull(),
    /** JSON of the runner's settings; never a secret value, only a secret's id. */
    runnerConfig: text("runner_config").notNull(),
    mode: text("mode", { enum: ["one-thread", "fresh"] }).notNull(),
    status: text("status", { enum: ["active", "paused", "archived", "awaiting-template-upgrade"] }).notNull(),
    /** `manual` or a cron expression. */
    schedule: text("schedule").notNull(),
    announce: integer("announce", { mode: "boolean" }).notNull().default(false),
    templateId: text("template_id"),
    templateVersion: integer("template_version"),
    createdBy: text("created_by").notNull(),
    createdAt: createdAt(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [index("workflows_project").on(t.projectId)],
);

/** Webhook triggers (a salted hash of the fire token, never the token) and system-managed message triggers. */
export const workflowTriggers = sqliteTable(
  "workflow_triggers",
  {
    id: text("id").primaryKey(),
    workflowId: text("workflow_id").notNull().references(() => workflows.id, { onDelete: "cascade" }),
    kind: text("kind", { enum: ["webhook", "message"] }).notNull(),
    tokenSalt: text("token_salt"),
    tokenHash: text("token_hash"),
    /** The token's first characters, to tell tokens apart; far too short to guess with. */
    /** The channel binding that owns a message trigger. */
    bindingId: text("binding_id"),
    createdAt: createdAt(),
    rotatedAt: integer("rotated_at"),
    revokedAt: integer("revoked_at"),
  },
  (t) => [index("workflow_triggers_workflow").on(t.workflowId), uniqueIndex("workflow_triggers_binding").on(t.bindingId)],
);

/**
 * One row per fire that was accepted. It is written on the fire endpoint's
 * path, so it carries only the index every read needs (bench/fire.ts): ids are
 * time-ordered, `project_id` is a copy of the workflow's (the workflow's foreign
 * key already cascades), and `trigger_id` has no foreign key (a run outlives its
 * trigger). No status index: what reads runs by status reads one workflow's
 * (its index), the few the pool is running (by id), or all of them once at start.
 */
export const workflowRuns = sqliteTable(
  "workflow_runs",
  {
    id: text("id").primaryKey(),
    workflowId: text("workflow_id").notNull().references(() => workflows.id, { onDelete: "cascade" }),
    projectId: text("project_id").notNull(),
    /** 1, 2, 3... per workflow: the order of a thread's turns. */
    number: integer("number").notNull(),
    triggerId: text("trigger_id"),
    triggerKind: text("trigger_kind", { enum: ["webhook", "message", "schedule", "manual"] }).notNull(),
    mode: text("mode", { enum: ["one-thread", "fresh"] }).notNull(),
    status: text("status", { enum: ["queued", "waiting-retry", "running", "succeeded", "failed", "cancelled"] }).notNull(),
    inputText: text("input_text"),
    /** JSON of where the input came from; rendered into the source line. */
    source: text("source").notNull(),
    error: text("error"),
    cancelled: text("cancelled", { enum: ["before-start", "while-working", "workflow-not-active", "package-off"] }),
    attempts: integer("attempts").notNull().default(0),
    tokensUsed: integer("tokens_used").notNull().default(0),
    queuedAt: integer("queued_at").notNull(),
    startedAt: integer("started_at"),
    finishedAt: integer("finished_at"),
    retryAt: integer("retry_at"),
  },
  (t) => [uniqueIndex("workflow_runs_number").on(t.workflowId, t.number)],
);

/** The events a run produced, in order. */
export const workflowRunEvents = sqliteTable(
  "workflow_run_events",
  {
    runId: text("run_id").notNull().references(() => workflowRuns.id, { onDelete: "cascade" }),
    seq: integer("seq").notNull(),
    type: text("type", { enum: ["note", "answer", "handoff", "background", "error"] }).notNull(),
    text: text("text").notNull(),
    at: integer("at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.runId, t.seq] })],
);

/**
 * What deleted workflows' runs spent, per project and hour of fire, so a spend
 * limit still counts them after their runs are gone (the usage of the live
 * runs is counted from the runs themselves). Rows older than a day are pruned.
 */
export const workflowSpendCarried = sqliteTable(
  "workflow_spend_carried",
  {
    projectId: text("project_id").notNull().references(() => projects.id, { onDelete: "cascade" }),
    /** Hours since the epoch of the runs' fire. */
    hour: integer("hour").notNull(),
    runs: integer("runs").notNull(),
    tokens: integer("tokens").notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.hour] })],
);

/** Per-project spend limits that govern every fire; absent rows mean the defaults. */
export const workflowSpendLimits = sqliteTable("workflow_spend_limits", {
  projectId: text("project_id").primaryKey().references(() => projects.id, { onDelete: "cascade" }),
  runsPerDay: integer("runs_per_day").notNull(),
  tokensPerDay: integer("tokens_per_day").notNull(),
  updatedAt: integer("updated_at").notNull(),
});
