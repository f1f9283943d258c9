import { SOURCE_KINDS, SourceStore, type SourceKind, type SourceRule } from "../sources/index.ts";
import { notFound, type Platform } from "../platform/index.ts";
import { integerOption, str, UsageError, type Command } from "./command.ts";

const project = { type: "string", required: true, description: "project slug" } as const;
const slug = { type: "string", required: true, description: "source slug" } as const;

function storeOf(platform: Platform) {
  return new SourceStore(platform.db);
}

function describeSource(s: { slug: string; kind: string; root: string | null; enabled: boolean; running: boolean; label: string }): string {
  const state = [s.enabled ? "enabled" : "disabled", s.running ? null : "not running"].filter(Boolean).join(", ");
  return `${s.slug}  ${s.kind}  ${s.root ?? "-"}  (${state})  ${s.label}`;
}

/** `hatch admin source ...`: add, list, enable/disable sources and set their URI-policy rules. */
export const sourceCommands: Command[] = [
  {
    path: ["admin", "source", "add"],
    summary: "Add a source (local and host sources need --root)",
    options: {
      project,
      slug,
      kind: { type: "string", required: true, description: SOURCE_KINDS.join(" | ") },
      root: { type: "string", description: "absolute OS path (local, host)" },
      label: { type: "string", description: "display name" },
    },
    run: async (ctx, v) => {
      const kind = str(v, "kind");
      if (!(SOURCE_KINDS as readonly string[]).includes(kind)) throw new UsageError(`--kind must be one of ${SOURCE_KINDS.join(", ")}`);
      const platform = await ctx.platform();
      const p = platform.projects.requireBySlug(str(v, "project"));
      return platform.audit.recorded(
        () => storeOf(platform).add(p.id, { slug: str(v, "slug"), kind: kind as SourceKind, root: v.root as string | undefined, label: v.label as string | undefined }),
        (source) => ({ action: "source.add", projectId: p.id, target: source.slug, detail: { kind, root: source.root, via: "cli" } }),
      );
    },
    human: (r) => [`added source ${describeSource(r as never)}`],
  },
  {
    path: ["admin", "source", "list"],
    readsOnly: true,
    summary: "List a project's sources",
    options: { project },
    run: async (ctx, v) => {
      const platform = await ctx.platform();
      return storeOf(platform).list(platform.projects.requireBySlug(str(v, "project")).id);
    },
    human: (r) => ((r as never[]).length ? (r as never[]).map(describeSource) : "(no sources)"),
  },
  ...(["enable", "disable"] as const).map(
    (verb): Command => ({
      path: ["admin", "source", verb],
      summary: verb === "enable" ? "Enable a source" : "Disable a source (its tabs become non-selectable; open sessions cannot be reopened)",
      options: { project, slug },
      run: async (ctx, v) => {
        const platform = await ctx.platform();
        const p = platform.projects.requireBySlug(str(v, "project"));
        const store = storeOf(platform);
        const { source } = platform.audit.recorded(
          () => ({ wasEnabled: store.require(p.id, str(v, "slug")).enabled, source: store.setEnabled(p.id, str(v, "slug"), verb === "enable") }),
          // Enabling an enabled source changes nothing, and writes no entry.
          ({ wasEnabled, source }) => (wasEnabled === source.enabled ? null : { action: "source.update", projectId: p.id, target: source.slug, detail: { enabled: source.enabled, via: "cli" } }),
        );
        return source;
      },
      human: (r) => [describeSource(r as never)],
    }),
  ),
  {
    path: ["admin", "source", "rule"],
    summary: "Allow or deny r/w/x on a source (or a --path below its root) to a role, a user or an agent",
    options: {
      project,
      source: { type: "string", required: true, description: "source slug" },
      role: { type: "string", oneOf: "subject", description: "role name" },
      user: { type: "string", oneOf: "subject", description: "user email" },
      agent: { type: "string", oneOf: "subject", description: "agent name" },
      path: { type: "string", description: "path below the source root" },
      allow: { type: "string", oneOf: "effect", description: "permissions to allow: r, rw, rwx, x ..." },
      deny: { type: "string", oneOf: "effect", description: "permissions to deny: r, rw, rwx, x ..." },
    },
    run: async (ctx, v) => {
      const subjects = (["role", "user", "agent"] as const).filter((k) => typeof v[k] === "string");
      const platform = await ctx.platform();
      const p = platform.projects.requireBySlug(str(v, "project"));
      const store = storeOf(platform);
      const source = store.require(p.id, str(v, "source"));
      const kind = subjects[0]!;
      const named = str(v, kind);
      const subject =
        kind === "user" ? requireMember(platform, p.id, named) : kind === "agent" ? requireAgent(platform, p.id, named) : requireRole(platform, p.id, named);
      const rule = {
        subjectKind: kind,
        subject,
        path: v.path as string | undefined,
        effect: v.allow !== undefined ? ("allow" as const) : ("deny" as const),
        perms: (v.allow ?? v.deny) as string,
      };
      return platform.audit.recorded(
        () => store.addRule(source, rule),
        (added) => ({ action: "source.rule", projectId: p.id, target: source.slug, detail: { ...added, via: "cli" } }),
      );
    },
    human: (r) => [describeRule(r as SourceRule)],
  },
  {
    path: ["admin", "source", "rule", "list"],
    readsOnly: true,
    summary: "List a source's rules with their ids",
    options: { project, source: { type: "string", required: true, description: "source slug" } },
    run: async (ctx, v) => {
      const platform = await ctx.platform();
      const store = storeOf(platform);
      return store.rules(store.require(platform.projects.requireBySlug(str(v, "project")).id, str(v, "source")).id);
    },
    human: (r) => ((r as SourceRule[]).length ? (r as SourceRule[]).map(describeRule) : "(no rules)"),
  },
  {
    path: ["admin", "source", "rule", "remove"],
    summary: "Remove a rule by its id (see rule list); sessions it allowed are re-checked at their next keystroke, reattach or exec",
    options: { project, source: { type: "string", required: true, description: "source slug" }, id: { type: "string", required: true, description: "rule id" } },
    run: async (ctx, v) => {
      const id = integerOption(v, "id", { min: 1, max: Number.MAX_SAFE_INTEGER, what: "a rule id (a positive integer)" })!;
      const platform = await ctx.platform();
      const p = platform.projects.requireBySlug(str(v, "project"));
      const store = storeOf(platform);
      const source = store.require(p.id, str(v, "source"));
      return platform.audit.recorded(
        () => store.removeRule(source, id),
        (rule) => ({ action: "source.rule.remove", projectId: p.id, target: source.slug, detail: { ...rule, via: "cli" } }),
      );
    },
    human: (r) => [`removed ${describeRule(r as SourceRule)}`],
  },
];

/** One line per rule: `#7 allow rx to role member on /docs`. */
function describeRule(rule: SourceRule): string {
  return `#${rule.id} ${rule.effect} ${rule.perms} to ${rule.subjectKind} ${rule.subject} on /${rule.path}`;
}

/** A rule for a role the project lacks ("Member", a typo) would be stored and never apply. */
function requireRole(platform: Platform, projectId: string, name: string): string {
  if (!platform.roles.list(projectId).some((role) => role.name === name)) throw notFound("role_not_found", `Cannot find a role named "${name}" in this project`);
  return name;
}

/** A member's user id by email; a user outside the project is refused as no user, since a rule for them would never apply. */
function requireMember(platform: Platform, projectId: string, email: string): string {
  const user = platform.users.findByEmail(email);
  if (!user || platform.projects.roleOf(projectId, user.id) === null) throw notFound("user_not_found", `Cannot find a member "${email}" in this project`);
  return user.id;
}

function requireAgent(platform: Platform, projectId: string, name: string): string {
  const agent = platform.agents.byName(projectId, name);
  if (!agent) throw notFound("agent_not_found", `Cannot find an agent named "${name}" in this project`);
  return agent.id;
}
