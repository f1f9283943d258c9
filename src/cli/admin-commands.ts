import { AGENT_PACKAGE, can, FEATURES, forbidden, notFound, Settings, type Platform, type SettingScope, type SettingView } from "../platform/index.ts";
import { str, UsageError, type Command, type CommandContext } from "./command.ts";

const project = { type: "string", required: true, description: "project slug" } as const;

function requireProject(platform: Platform, slug: string) {
  return platform.projects.requireBySlug(slug);
}

const settingProject = { type: "string", description: "a project's slug: its own value, over the server-wide one (default: server-wide)" } as const;

/** The project `--project` names, or null for the server-wide level. */
function settingScope(platform: Platform, v: Record<string, string | boolean | undefined>): string | null {
  return v.project === undefined ? null : requireProject(platform, str(v, "project")).id;
}

/** How the human output says where a value is set. */
const SCOPE_WORDS: Record<SettingScope, string> = { project: "set for the project", server: "set server-wide", default: "default" };

/** "terminalMaxSessions = 3 sessions (set for the project)"; the unit only where `get` lists values. */
function settingLine(setting: SettingView, withUnit: boolean): string {
  return `${setting.key} = ${setting.value}${withUnit ? ` ${setting.unit}` : ""} (${SCOPE_WORDS[setting.scope]})`;
}

/** `--password P` or `--password-stdin`: a password typed on the command line shows in `ps` and the shell's history. */
function passwordOptions(description: string) {
  return {
    password: { type: "string", oneOf: "password", description: `${description}; visible in ps and shell history, prefer --password-stdin` },
    "password-stdin": { type: "boolean", oneOf: "password", description: "read the password from standard input (one trailing newline dropped)" },
  } as const;
}

/** The password given by `--password` or `--password-stdin` (exactly one: their `oneOf` group). */
async function passwordOption(ctx: CommandContext, v: Record<string, string | boolean | undefined>): Promise<string> {
  const fromStdin = v["password-stdin"] === true;
  // `echo "$PASSWORD" | hatch …` adds a newline that is not part of the password.
  return fromStdin ? (await ctx.readStdin()).replace(/\r?\n$/, "") : str(v, "password");
}

/** `hatch admin ...`: users, projects, members, roles, grants, agents, settings. */
export const adminCommands: Command[] = [
  {
    path: ["admin", "user", "add"],
    summary: "Create a user",
    options: {
      email: { type: "string", required: true, description: "the user's email" },
      ...passwordOptions("initial password (8+ characters)"),
    },
    run: async (ctx, v) => {
      const password = await passwordOption(ctx, v);
      const platform = await ctx.platform();
      return platform.users.create(str(v, "email"), password, (user) =>
        platform.audit.write({ action: "user.add", userId: user.id, target: user.email, detail: { via: "cli" } }),
      );
    },
    human: (r) => `created user ${(r as { email: string }).email} (${(r as { id: string }).id})`,
  },
  {
    path: ["admin", "user", "password"],
    summary: "Set a user's password and end all their sign-ins",
    options: {
      email: { type: "string", required: true, description: "the user's email" },
      ...passwordOptions("new password (8+ characters)"),
    },
    run: async (ctx, v) => {
      const password = await passwordOption(ctx, v);
      const platform = await ctx.platform();
      const user = platform.users.requireByEmail(str(v, "email"));
      let signedOut = 0;
      await platform.users.setPassword(user.id, password, () => {
        signedOut = platform.sessions.endAllFor(user.id);
        platform.audit.write({ action: "user.password", userId: user.id, target: user.email, detail: { signedOut, via: "cli" } });
      });
      return { ...user, signedOut };
    },
    human: (r) => {
      const { email, signedOut } = r as { email: string; signedOut: number };
      return `set the password of ${email}; ended ${signedOut} sign-in${signedOut === 1 ? "" : "s"}`;
    },
  },
  {
    path: ["admin", "project", "add"],
    summary: "Create a project with its built-in roles; the owner becomes its first member",
    options: {
      slug: { type: "string", required: true, description: "short name, a-z 0-9 -" },
      name: { type: "string", required: true, description: "display name" },
      owner: { type: "string", required: true, description: "owner's email" },
    },
    run: async (ctx, v) => {
      const platform = await ctx.platform();
      const owner = platform.users.requireByEmail(str(v, "owner"));
      return platform.audit.recorded(
        () => platform.projects.create(str(v, "slug"), str(v, "name"), owner.id),
        (created) => ({ action: "project.add", userId: owner.id, projectId: created.id, target: created.slug, detail: { owner: owner.email, via: "cli" } }),
      );
    },
    human: (r) => `created project ${(r as { slug: string }).slug} (${(r as { id: string }).id})`,
  },
  {
    path: ["admin", "member", "add"],
    summary: "Add a user to a project with a role (or change their role)",
    options: {
      project,
      email: { type: "string", required: true, description: "the member's email" },
      role: { type: "string", required: true, description: "owner, admin, manager, member, viewer or a custom role" },
    },
    run: async (ctx, v) => {
      const platform = await ctx.platform();
      const p = requireProject(platform, str(v, "project"));
      const user = platform.users.requireByEmail(str(v, "email"));
      platform.audit.recorded(() => platform.projects.setMember(p.id, user.id, str(v, "role")), {
        action: "member.set",
        userId: user.id,
        projectId: p.id,
        target: user.email,
        detail: { role: str(v, "role"), via: "cli" },
      });
      return { project: p.slug, email: user.email, role: str(v, "role") };
    },
    human: (r) => {
      const m = r as { project: string; email: string; role: string };
      return `${m.email} is ${m.role} of ${m.project}`;
    },
  },
  {
    path: ["admin", "member", "remove"],
    summary: "Remove a user from a project: what they held there stops working",
    options: {
      project,
      email: { type: "string", required: true, description: "the member's email" },
    },
    run: async (ctx, v) => {
      const platform = await ctx.platform();
      const p = requireProject(platform, str(v, "project"));
      const user = platform.users.requireByEmail(str(v, "email"));
      const role = platform.audit.recorded(
        () => {
          const removed = platform.projects.removeMember(p.id, user.id);
          if (removed === null) throw forbidden("not_a_member", `Cannot remove ${user.email} from ${p.slug}: they are not a member`);
          return removed;
        },
        (removed) => ({ action: "member.remove", userId: user.id, projectId: p.id, target: user.email, detail: { role: removed, via: "cli" } }),
      );
      // The shape of `member add`'s answer, `role` being the one held now; `previousRole` says what was taken away.
      return { project: p.slug, email: user.email, role: null, previousRole: role };
    },
    human: (r) => {
      const m = r as { project: string; email: string; previousRole: string };
      return `${m.email} is no longer a member of ${m.project} (was ${m.previousRole})`;
    },
  },
  {
    path: ["admin", "role", "add"],
    summary: "Create a custom role (it starts with no features)",
    options: { project, name: { type: "string", required: true, description: "role name" } },
    run: async (ctx, v) => {
      const platform = await ctx.platform();
      const p = requireProject(platform, str(v, "project"));
      return platform.audit.recorded(
        () => platform.roles.add(p.id, str(v, "name")),
        (role) => ({ action: "role.add", projectId: p.id, target: role.name, detail: { via: "cli" } }),
      );
    },
    human: (r) => `created role ${(r as { name: string }).name}`,
  },
  ...(["grant", "revoke"] as const).map(
    (verb): Command => ({
      path: ["admin", verb],
      summary: verb === "grant" ? "Grant a feature to a role" : "Revoke a feature from a role",
      options: {
        project,
        role: { type: "string", required: true, description: "role name" },
        feature: { type: "string", required: true, description: "feature, e.g. terminal.read" },
      },
      run: async (ctx, v) => {
        const platform = await ctx.platform();
        const p = requireProject(platform, str(v, "project"));
        const role = str(v, "role");
        if (role === "owner") throw forbidden("owner_immutable", "The owner role always holds every feature");
        // A grant the role held already (a revoke of one it did not) changes nothing, and records nothing.
        platform.audit.recorded(
          () => platform.roles[verb](p.id, role, str(v, "feature")),
          (changed) => (changed ? { action: `role.${verb}`, projectId: p.id, target: role, detail: { feature: str(v, "feature"), via: "cli" } } : null),
        );
        return { project: p.slug, role, features: [...platform.roles.featuresOf(p.id, role)].sort() };
      },
      human: (r) => {
        const g = r as { role: string; features: string[] };
        return `${g.role}: ${g.features.join(", ") || "(no features)"}`;
      },
    }),
  ),
  {
    path: ["admin", "package-access"],
    summary: "Attach (--feature F) or detach (--clear) the package-access feature of a package",
    options: {
      project,
      package: { type: "string", required: true, description: "package slug, e.g. agent" },
      feature: { type: "string", oneOf: "access", description: "feature a role needs to see the package" },
      clear: { type: "boolean", oneOf: "access", description: "detach the feature: every role sees the package" },
    },
    run: async (ctx, v) => {
      const platform = await ctx.platform();
      const p = requireProject(platform, str(v, "project"));
      const feature = platform.audit.recorded(
        () => {
          if (v.clear) platform.roles.clearPackageAccess(p.id, str(v, "package"));
          else platform.roles.setPackageAccess(p.id, str(v, "package"), str(v, "feature"));
          return platform.roles.packageAccessFeature(p.id, str(v, "package"));
        },
        (feature) => ({ action: "package.access", projectId: p.id, target: str(v, "package"), detail: { feature, via: "cli" } }),
      );
      return { project: p.slug, package: str(v, "package"), feature };
    },
    human: (r) => {
      const a = r as { package: string; feature: string | null };
      return a.feature ? `package ${a.package} needs ${a.feature}` : `package ${a.package} is visible to every role`;
    },
  },
  {
    path: ["admin", "agent", "add"],
    summary: "Create an agent owned by a member",
    options: {
      project,
      name: { type: "string", required: true, description: "agent name" },
      owner: { type: "string", required: true, description: "owner's email" },
      shared: { type: "boolean", description: "usable by every member" },
    },
    run: async (ctx, v) => {
      const platform = await ctx.platform();
      const p = requireProject(platform, str(v, "project"));
      const owner = platform.users.requireByEmail(str(v, "owner"));
      const member = platform.callers.member(p, owner.id);
      if (!member) throw forbidden("not_a_member", `${owner.email} is not a member of ${p.slug}`);
      // What POST /api/agents asks of its caller: an agent scopes terminal sessions, of no use to a role without the terminal.
      if (!can(member, FEATURES.terminalRead)) {
        throw forbidden("feature_required", `${owner.email} (role ${member.role}) lacks the feature ${FEATURES.terminalRead}, which an agent's sessions need`);
      }
      if (!platform.callers.packageVisible(member, AGENT_PACKAGE)) {
        throw forbidden("package_hidden", `${owner.email} (role ${member.role}) cannot use the ${AGENT_PACKAGE} package, which agents belong to`);
      }
      return platform.audit.recorded(
        () => platform.agents.create(p.id, str(v, "name"), owner.id, v.shared === true),
        (agent) => ({ action: "agent.add", userId: owner.id, projectId: p.id, agentId: agent.id, target: agent.name, detail: { via: "cli" } }),
      );
    },
    human: (r) => `created agent ${(r as { name: string }).name} (${(r as { id: string }).id})`,
  },
  {
    path: ["admin", "setting", "get"],
    readsOnly: true,
    summary: "Show one setting, or all of them: server-wide, or in force for a project",
    positionals: [{ name: "KEY", required: false }],
    options: { project: settingProject },
    run: async (ctx, v, [key]) => {
      const platform = await ctx.platform();
      const projectId = settingScope(platform, v);
      if (key === undefined) return platform.settings.list(projectId);
      if (!Settings.isKey(key)) throw notFound("setting_not_found", `Cannot find setting "${key}"`);
      return platform.settings.list(projectId).find((s) => s.key === key);
    },
    human: (r) => (Array.isArray(r) ? r : [r]).map((s: SettingView) => settingLine(s, true)),
  },
  {
    path: ["admin", "setting", "set"],
    summary: "Change a setting: server-wide (every project without its own value), or for one project",
    positionals: [
      { name: "KEY", required: true },
      { name: "VALUE", required: true },
    ],
    options: { project: settingProject },
    run: async (ctx, v, [key, value]) => {
      // Number("") and Number(" ") are 0, which turns channelInboundFiresPerMinute's cap off: only digits are a value.
      if (!/^-?\d+$/.test(value!)) throw new UsageError(`VALUE must be a whole number, not "${value}"`);
      const platform = await ctx.platform();
      const projectId = settingScope(platform, v);
      return platform.audit.recorded(
        () => platform.settings.set(key!, Number(value), projectId),
        (setting) => ({ action: "settings.update", projectId, target: key!, detail: { value: setting.value, via: "cli" } }),
      );
    },
    human: (r) => settingLine(r as SettingView, false),
  },
  {
    path: ["admin", "setting", "unset"],
    summary: "Drop a setting's server-wide value (back to the default) or a project's own (back to the server-wide one)",
    positionals: [{ name: "KEY", required: true }],
    options: { project: settingProject },
    run: async (ctx, v, [key]) => {
      const platform = await ctx.platform();
      const projectId = settingScope(platform, v);
      const { setting } = platform.audit.recorded(
        () => platform.settings.clear(key!, projectId),
        ({ setting, cleared }) => (cleared ? { action: "settings.clear", projectId, target: key!, detail: { value: setting.value, scope: setting.scope, via: "cli" } } : null),
      );
      return setting;
    },
    human: (r) => settingLine(r as SettingView, false),
  },
];
