/**
 * The identity of a session: (user, project, agent, id). Every agent has its own
 * namespace and users never share one; `agentId` null is the user's own namespace.
 */
export interface SessionKey {
  userId: string;
  projectId: string;
  agentId: string | null;
  id: string;
}

/** The namespace part of a key: whose sessions these are. */
export type SessionNamespace = Omit<SessionKey, "id">;

/** A stable string form of a key for maps. NUL cannot appear in any of the parts. */
export function keyString(key: SessionKey): string {
  return `${namespaceString(key)}\0${key.id}`;
}

/** A stable string form of a namespace for maps. */
export function namespaceString(ns: SessionNamespace): string {
  return `${ns.userId}\0${ns.projectId}\0${ns.agentId ?? ""}`;
}

/** Public session ids: short, URL-safe, never needing percent-encoding. */
export const SESSION_ID = /^[A-Za-z0-9_-]{1,64}$/;
