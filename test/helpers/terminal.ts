import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Project } from "../../src/platform/index.ts";
import type { Source } from "../../src/sources/index.ts";
import type { HttpClient } from "./http-client.ts";
import { TerminalClient, type OpenOptions } from "./terminal-client.ts";
import type { Person, World } from "./world.ts";

/** Terminal routes prefix. */
export const TERMINAL = "/api/packages/agent/terminal";

/** A local source rooted in a fresh temp dir, with rules for roles. */
export function localSource(world: World, project: Project, slug: string, grants: Record<string, string> = { member: "rwx" }): Source & { root: string } {
  const root = mkdtempSync(join(tmpdir(), `hatch-src-${slug}-`));
  const store = world.hatch.terminal.sources;
  const source = store.add(project.id, { slug, kind: "local", root });
  for (const [role, perms] of Object.entries(grants)) store.addRule(source, { subjectKind: "role", subject: role, effect: "allow", perms });
  world.onDispose(() => rmSync(root, { recursive: true, force: true }));
  return { ...source, root };
}

/**
 * Path rules for one role on a source, written as an operator says them.
 *
 * @example
 * roleRules(world, source, "member", "deny r on secret", "allow r on secret/pub")
 */
export function roleRules(world: World, source: Source, role: string, ...rules: string[]): void {
  for (const rule of rules) {
    const match = /^(allow|deny) ([rwx]+) on (\S+)$/.exec(rule);
    if (!match) throw new Error(`Cannot read rule "${rule}": expected "allow|deny PERMS on PATH"`);
    world.hatch.terminal.sources.addRule(source, { subjectKind: "role", subject: role, path: match[3], effect: match[1] as "allow" | "deny", perms: match[2]! });
  }
}

/** POST /terminal/sessions as this client. */
export function createSession(client: HttpClient, body: Record<string, unknown>, query = "") {
  return client.post(`${TERMINAL}/sessions${query}`, body);
}

/** Open the terminal WebSocket of a session as a person (or anonymously with null). */
export function openTerminal(world: World, person: Person | null, sessionId: string, options: OpenOptions = {}): Promise<TerminalClient> {
  return TerminalClient.open(world.hatch.companionUrl, person?.client ?? null, sessionId, options);
}

/** Open a session's terminal and wait until it shows the first snapshot and is ready. */
export async function attached(world: World, person: Person, sessionId: string, options: OpenOptions = {}): Promise<TerminalClient> {
  const terminal = await openTerminal(world, person, sessionId, options);
  await terminal.control(options.since === undefined ? "snapshot" : "hello");
  return terminal;
}

/** Shell prompt-agnostic marker: type a command that prints a unique token, wait for it. */
export async function runAndSee(terminal: TerminalClient, command: string, token: string): Promise<void> {
  terminal.type(`${command}\r`);
  await terminal.sees(token);
}

/** As a member, open session "s" on docs; an admin who may also type (core.execute) supervises the project. */
export async function sessionAnAdminSupervises(world: World) {
  const project = await world.project();
  const member = await world.signedIn(project, "member");
  world.platform.roles.grant(project.id, "admin", "core.execute");
  const admin = await world.signedIn(project, "admin");
  localSource(world, project, "docs", { member: "rwx" });
  await createSession(member.client, { sourceSlug: "docs", id: "s" });
  return { project, member, admin };
}

/** The WebSocket URL of a session on the world's companion server, with an optional query ("userId=…"). */
export function terminalUrl(world: World, sessionId: string, query = ""): string {
  return `${world.hatch.companionUrl.replace(/^http/, "ws")}/ws/terminal/${sessionId}${query ? `?${query}` : ""}`;
}

/** As a project's owner, create session `id` on Container Root; returns the owner and the server's session object. */
export async function ownerRootSession(world: World, id = "s") {
  const project = await world.project();
  const owner = await world.signedIn(project, "owner");
  await createSession(owner.client, { sourceSlug: "container-root", id });
  const session = world.hatch.terminal.sessions.find({ userId: owner.user.id, projectId: project.id, agentId: null, id })!;
  return { project, owner, session };
}
