import { Elysia, t } from "elysia";
import { SESSION_COOKIE, sessionTokenOf, sessionTokensIn } from "./auth-sessions.ts";
import { inProject, isAdminRole, requireFeature, requireProjectAdmin, type Caller } from "./caller.ts";
import { cameOverTls, clientAddress, normalizeAddress, rateKey } from "./client-address.ts";
import { unauthorized, forbidden, notFound, tooMany } from "./errors.ts";
import { AGENT_PACKAGE, FEATURES } from "./features.ts";
import { parseJsonRequest, requireJsonBody } from "./json-body.ts";
import { LoginThrottle } from "./login-throttle.ts";
import type { Platform } from "./platform.ts";
import { MAX_EMAIL_LENGTH, MAX_PASSWORD_LENGTH } from "./users.ts";

/** What the platform routes need besides the platform. */
export interface PlatformRoutesOptions {
  /** Peers whose X-Forwarded-For names the client (HATCH_TRUSTED_PROXIES). */
  trustedProxies: readonly string[];
  /** Failed-login limits; DEFAULT_LOGIN_THROTTLE when absent. */
  loginThrottle?: LoginThrottle;
}

/**
 * Routes of the platform: login, the active project, settings, audit, secrets, roles, agents.
 * A plugin per kind of caller, so each resolves its caller in its own
 * `derive` (which Elysia runs before it validates the query and body: without a
 * session every request gets 401, never a 400 that shows what a route takes),
 * and a derive never reaches routes of another kind.
 */
export function platformRoutes(platform: Platform, options: PlatformRoutesOptions) {
  return new Elysia({ name: "platform-routes" })
    .use(sessionRoutes(platform, options))
    .use(accountRoutes(platform))
    .use(projectRoutes(platform))
    .use(secretRoutes(platform))
    .use(agentRoutes(platform));
}

/** Login and logout: anyone may call them. */
function sessionRoutes(platform: Platform, options: PlatformRoutesOptions) {
  const trusted = new Set(options.trustedProxies.map(normalizeAddress));
  // Secure whenever the browser came over TLS, so the cookie is never sent in the clear to this site again.
  const cookieOptions = (expires: Date, request: Request, peer: string | undefined) => ({
    httpOnly: true,
    sameSite: "lax" as const,
    path: "/",
    expires,
    secure: cameOverTls(request.url, peer, request.headers.get("x-forwarded-proto"), trusted),
  });
  const throttle = options.loginThrottle ?? new LoginThrottle();

  return new Elysia({ name: "platform-session-routes" })
    .onParse(parseJsonRequest)
    .derive(({ request }) => ({ sessionToken: sessionTokenOf(request.headers.get("cookie")) }))
    .post(
      "/api/auth/login",
      async ({ body, cookie, sessionToken, request, server }) => {
        const peer = server?.requestIP(request)?.address;
        const client = rateKey(clientAddress(peer, request.headers.get("x-forwarded-for"), trusted));
        const wait = await throttle.attempt(client, body.email);
        if (wait > 0) throw tooMany("too_many_logins", "Too many failed logins: try again later", wait);
        // Every attempt ends as a success or a failure, whatever throws: one left begun would hold a place in the window.
        let succeeded = false;
        try {
          const login = await platform.users.verifyLogin(body.email, body.password);
          // One answer for an unknown email and a wrong password.
          if (!login) throw unauthorized("Wrong email or password");
          const { user } = login;
          const first = platform.projects.membershipsOf(user.id)[0];
          const signedIn = await platform.sessions.create(login, first?.project.id ?? null);
          // Reset while it was verified: the password given is wrong now.
          if (!signedIn) throw unauthorized("Wrong email or password");
          succeeded = true;
          throttle.succeeded(client, body.email);
          await platform.sessions.destroy(sessionToken);
          cookie[SESSION_COOKIE]!.set({ value: signedIn.token, ...cookieOptions(new Date(signedIn.expiresAt), request, peer) });
          return { user, project: first?.project ?? null, role: first?.role ?? null };
        } finally {
          if (!succeeded) throttle.failed(client, body.email);
        }
      },
      {
        // JSON bodies only, whatever the body says: a cross-site HTML form can send a form-encoded or a text/plain body
        // (the latter can hold JSON), which would sign the visitor in as someone else (login CSRF).
        transform: requireJsonBody,
        body: t.Object({ email: t.String({ maxLength: MAX_EMAIL_LENGTH }), password: t.String({ maxLength: MAX_PASSWORD_LENGTH }) }),
      },
    )
    .post("/api/auth/logout", async ({ cookie, request, server }) => {
      for (const token of sessionTokensIn(request.headers.get("cookie"))) await platform.sessions.destroy(token);
      cookie[SESSION_COOKIE]!.set({ value: "", ...cookieOptions(new Date(0), request, server?.requestIP(request)?.address) });
      return { ok: true };
    });
}

/** The signed-in user's own routes: who am I, and the active project. */
function accountRoutes(platform: Platform) {
  return new Elysia({ name: "platform-account-routes" })
    .derive(async ({ request }) => ({ caller: await platform.callers.resolve(sessionTokenOf(request.headers.get("cookie"))) }))
    .onParse(parseJsonRequest)
    .onTransform(requireJsonBody)
    .get("/api/auth/me", ({ caller }) => {
      return {
        user: caller.user,
        project: caller.project,
        role: caller.role,
        features: [...caller.features].sort(),
        projects: platform.projects.membershipsOf(caller.user.id).map((m) => ({ ...m.project, role: m.role })),
      };
    })
    .post(
      "/api/auth/project",
      ({ body, caller }) => {
        const project = platform.projects.bySlug(body.project) ?? platform.projects.get(body.project);
        const role = project && platform.projects.roleOf(project.id, caller.user.id);
        // A project the user is not in looks like one that does not exist.
        if (!project || !role) throw notFound("project_not_found", `Cannot switch to project "${body.project}": no such project`);
        platform.sessions.setProject(caller.sessionId, project.id);
        return { project, role, features: [...platform.roles.featuresOf(project.id, role)].sort() };
      },
      { body: t.Object({ project: t.String({ minLength: 1, maxLength: 100 }) }) },
    );
}

/**
 * Secrets: a project's, for its owners and admins, and the caller's own, which
 * need no project (a member removed from their last project still manages
 * the credentials they stored).
 */
function secretRoutes(platform: Platform) {
  return new Elysia({ name: "platform-secret-routes" })
    .derive(async ({ request }) => ({ caller: await platform.callers.resolve(sessionTokenOf(request.headers.get("cookie"))) }))
    .onParse(parseJsonRequest)
    .onTransform(requireJsonBody)
    .get(
      "/api/secrets",
      ({ query, caller }) => {
        const scope = query.scope ?? "user";
        return { secrets: platform.secrets.list(scope, secretSlot(caller, scope).scopeId) };
      },
      { query: t.Object({ scope: t.Optional(t.Union([t.Literal("user"), t.Literal("project")])) }) },
    )
    .put(
      "/api/secrets/:scope/:id",
      async ({ params, body, caller }) => {
        const { scopeId, projectId } = secretSlot(caller, params.scope);
        const sealed = await platform.secrets.seal(params.scope, scopeId, params.id, body.value);
        return platform.audit.recorded(() => platform.secrets.store(sealed), { action: "secret.put", userId: caller.user.id, projectId, target: `${params.scope}:${params.id}` });
      },
      {
        params: t.Object({ scope: t.Union([t.Literal("user"), t.Literal("project")]), id: t.String() }),
        body: t.Object({ value: t.String() }),
      },
    )
    .delete(
      "/api/secrets/:scope/:id",
      ({ params, caller }) => {
        const { scopeId, projectId } = secretSlot(caller, params.scope);
        platform.audit.recorded(
          () => {
            if (!platform.secrets.delete(params.scope, scopeId, params.id)) throw notFound("secret_not_found", `Cannot find secret "${params.id}"`);
          },
          { action: "secret.delete", userId: caller.user.id, projectId, target: `${params.scope}:${params.id}` },
        );
        return { ok: true };
      },
      { params: t.Object({ scope: t.Union([t.Literal("user"), t.Literal("project")]), id: t.String() }) },
    );
}

/**
 * Whose secret a request names, and the project its audit entry belongs to: a
 * project's (for its owners and admins, in its log), or the caller's own,
 * which is theirs whatever project they are in, or none (server-wide entry, so
 * a project's admins do not see the names of a member's personal secrets).
 */
function secretSlot(caller: Caller, scope: "user" | "project"): { scopeId: string; projectId: string | null } {
  if (scope === "user") return { scopeId: caller.user.id, projectId: null };
  const member = inProject(caller);
  requireProjectAdmin(member);
  return { scopeId: member.project.id, projectId: member.project.id };
}

/** Routes of the signed-in user's active project: settings, audit, roles, package access. */
function projectRoutes(platform: Platform) {
  return new Elysia({ name: "platform-project-routes" })
    .derive(async ({ request }) => ({ caller: await platform.callers.resolveInProject(sessionTokenOf(request.headers.get("cookie"))) }))
    .onParse(parseJsonRequest)
    .onTransform(requireJsonBody)
    .get("/api/settings", ({ caller }) => {
      requireProjectAdmin(caller);
      return { settings: platform.settings.list(caller.project.id) };
    })
    .put(
      "/api/settings/:key",
      ({ params, body, caller }) => {
        requireProjectAdmin(caller);
        return platform.audit.recordedBy(caller, "settings.update", () => platform.settings.set(params.key, body.value, caller.project.id), (setting) => ({
          target: params.key,
          detail: { value: setting.value },
        }));
      },
      { body: t.Object({ value: t.Unknown() }) },
    )
    .delete("/api/settings/:key", ({ params, caller }) => {
      requireProjectAdmin(caller);
      const { setting } = platform.audit.recordedBy(caller, "settings.clear", () => platform.settings.clear(params.key, caller.project.id), ({ setting, cleared }) =>
        // Nothing was set at the project's level: nothing changed, and nothing is recorded.
        cleared ? { target: params.key, detail: { value: setting.value, scope: setting.scope } } : null,
      );
      return setting;
    })
    .get(
      "/api/audit",
      ({ query, caller }) => {
        requireProjectAdmin(caller);
        return { entries: platform.audit.query({ projectId: caller.project.id, ...query }) };
      },
      {
        query: t.Object({
          action: t.Optional(t.String({ maxLength: 100 })),
          since: t.Optional(t.Numeric({ minimum: 0, multipleOf: 1, title: "since" })),
          until: t.Optional(t.Numeric({ minimum: 0, multipleOf: 1, title: "until" })),
          before: t.Optional(t.Numeric({ minimum: 1, multipleOf: 1, title: "before" })),
          limit: t.Optional(t.Numeric({ minimum: 1, maximum: 1000, multipleOf: 1, title: "limit" })),
        }),
      },
    )
    .get("/api/roles", ({ caller }) => {
      requireProjectAdmin(caller);
      return { roles: platform.roles.list(caller.project.id) };
    })
    .post(
      "/api/roles",
      ({ body, caller, set }) => {
        requireProjectAdmin(caller);
        const role = platform.audit.recordedBy(caller, "role.add", () => platform.roles.add(caller.project.id, body.name), () => ({ target: body.name }));
        set.status = 201;
        return role;
      },
      { body: t.Object({ name: t.String({ maxLength: 40 }) }) },
    )
    .put(
      "/api/roles/:role/features/:feature",
      ({ params, caller }) => {
        requireGrantEditor(caller.role, params.role);
        const grant = () => platform.roles.grant(caller.project.id, params.role, params.feature, caller.features);
        platform.audit.recordedBy(caller, "role.grant", grant, (granted) => (granted ? { target: params.role, detail: { feature: params.feature } } : null));
        return { role: params.role, features: [...platform.roles.featuresOf(caller.project.id, params.role)].sort() };
      },
    )
    .delete("/api/roles/:role/features/:feature", ({ params, caller }) => {
      requireGrantEditor(caller.role, params.role);
      const revoke = () => platform.roles.revoke(caller.project.id, params.role, params.feature, caller.features);
      platform.audit.recordedBy(caller, "role.revoke", revoke, (revoked) => (revoked ? { target: params.role, detail: { feature: params.feature } } : null));
      return { role: params.role, features: [...platform.roles.featuresOf(caller.project.id, params.role)].sort() };
    })
    .get("/api/packages/:package/access", ({ params, caller }) => {
      // Who manages roles needs to know what hides a package from them; the owner alone changes it.
      requireProjectAdmin(caller);
      return { package: params.package, feature: platform.roles.packageAccessOf(caller.project.id, params.package) };
    })
    .put(
      "/api/packages/:package/access",
      ({ params, body, caller }) => {
        if (caller.role !== "owner") throw forbidden("owner_required", "Only the project owner can attach a package-access feature");
        const attach = () => platform.roles.setPackageAccess(caller.project.id, params.package, body.feature);
        platform.audit.recordedBy(caller, "package.access", attach, () => ({ target: params.package, detail: { feature: body.feature } }));
        return { package: params.package, feature: body.feature };
      },
      { body: t.Object({ feature: t.String({ maxLength: 64 }) }) },
    )
    .delete("/api/packages/:package/access", ({ params, caller }) => {
      if (caller.role !== "owner") throw forbidden("owner_required", "Only the project owner can detach a package-access feature");
      const detach = () => platform.roles.clearPackageAccess(caller.project.id, params.package);
      platform.audit.recordedBy(caller, "package.access", detach, () => ({ target: params.package, detail: { feature: null } }));
      return { package: params.package, feature: null };
    });
}

/**
 * The agent store: the agent package's own, so a role the package is hidden
 * from gets 404 here as on its other routes, before its body is looked at.
 */
function agentRoutes(platform: Platform) {
  return new Elysia({ name: "platform-agent-routes" })
    .derive(async ({ request }) => {
      const caller = await platform.callers.resolveInProject(sessionTokenOf(request.headers.get("cookie")));
      platform.callers.requirePackage(caller, AGENT_PACKAGE);
      return { caller };
    })
    .onParse(parseJsonRequest)
    .onTransform(requireJsonBody)
    .get("/api/agents", ({ caller }) => {
      return { agents: platform.agents.usableBy(caller.project.id, caller.user.id) };
    })
    .post(
      "/api/agents",
      ({ body, caller, set }) => {
        // Agents scope terminal sessions: a role that cannot open the terminal (viewers, a new custom role) has no use for one,
        // and a shared one it made would be listed to every member and take its name.
        requireFeature(caller, FEATURES.terminalRead);
        const create = () => platform.agents.create(caller.project.id, body.name, caller.user.id, body.shared ?? false);
        const agent = platform.audit.recordedBy(caller, "agent.add", create, (agent) => ({ agentId: agent.id, target: agent.name }));
        set.status = 201;
        return agent;
      },
      { body: t.Object({ name: t.String({ maxLength: 64 }), shared: t.Optional(t.Boolean()) }) },
    );
}

/**
 * Admins edit grants of every role but the owner's; only the owner edits the
 * admin role. Which features they may grant or revoke (only those their own
 * role holds) is checked by Roles#grant and Roles#revoke.
 */
function requireGrantEditor(callerRole: string, targetRole: string): void {
  if (!isAdminRole(callerRole)) throw forbidden("admin_required", "Only project owners and admins can do this");
  if (targetRole === "owner") throw forbidden("owner_immutable", "The owner role always holds every feature");
  if (targetRole === "admin" && callerRole !== "owner") throw forbidden("owner_required", "Only the owner can change the admin role");
}
