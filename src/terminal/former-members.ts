import type { Platform } from "../platform/index.ts";
import type { SessionManager } from "../pty/index.ts";

/** What the views of a session ended because its owner left the project are told. */
export const FORMER_MEMBER_REASON = "The session was ended: its owner is no longer a member of the project";

/**
 * End every live session whose owner is no longer a member of the session's
 * project (removed, or their account deleted), each audited as
 * `terminal.terminate` with `reason: "owner_not_a_member"`; returns their ids.
 *
 * Their own views and requests are refused already, since every one re-reads
 * membership; without this the shell itself would run on, reachable only by a
 * supervisor, until idle shutdown. It runs with the reaper, not on an access
 * change: `hatch admin member remove` is another process, whose change reaches
 * a running server only through the database.
 *
 * @example
 * const ended = await endSessionsOfFormerMembers(platform, sessions); // ["s1"] once s1's owner was removed
 */
export async function endSessionsOfFormerMembers(platform: Platform, sessions: SessionManager): Promise<string[]> {
  const ended: string[] = [];
  for (const info of sessions.listAll()) {
    const key = { userId: info.userId, projectId: info.projectId, agentId: info.agentId, id: info.id };
    // Read again after each destroy awaited: the owner may have been added back, or the session ended, meanwhile.
    if (platform.projects.roleOf(info.projectId, info.userId) !== null || !sessions.find(key)) continue;
    await sessions.destroy(key, FORMER_MEMBER_REASON);
    ended.push(info.id);
    platform.audit.write({
      action: "terminal.terminate",
      // No one asked for this end: the entry names whose session it was, as a failed run names its creator.
      userId: info.userId,
      projectId: info.projectId,
      agentId: info.agentId,
      target: info.id,
      detail: { sessionUserId: info.userId, reason: "owner_not_a_member" },
    });
  }
  return ended;
}
