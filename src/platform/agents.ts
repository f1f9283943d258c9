import { and, eq, or, sql } from "drizzle-orm";
import type { Db } from "../db/index.ts";
import { agents } from "../db/index.ts";
import { badRequest, conflict } from "./errors.ts";
import { newId } from "./ids.ts";

/** An agent of a project. */
export interface Agent {
  id: string;
  projectId: string;
  name: string;
  ownerUserId: string;
  shared: boolean;
  createdAt: number;
}

const AGENT_NAME = /^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$/;

/** The agent store of every project. */
export class Agents {
  /** Prepared once: a request that names an agent resolves it. */
  readonly #byId;

  constructor(private readonly db: Db) {
    this.#byId = db.select().from(agents).where(and(eq(agents.id, sql.placeholder("agentId")), eq(agents.projectId, sql.placeholder("projectId")))).prepare();
  }

  /** Create an agent owned by a member. */
  create(projectId: string, name: string, ownerUserId: string, shared = false): Agent {
    if (!AGENT_NAME.test(name)) throw badRequest("invalid_name", `Cannot add agent: "${name}" is not a valid agent name`);
    if (this.byName(projectId, name)) throw conflict("agent_exists", `Cannot add agent: "${name}" already exists`);
    const agent = { id: newId(), projectId, name, ownerUserId, shared, createdAt: Date.now() };
    this.db.insert(agents).values(agent).run();
    return agent;
  }

  /** The agent of a project with this name, or null. */
  byName(projectId: string, name: string): Agent | null {
    return this.db.select().from(agents).where(and(eq(agents.projectId, projectId), eq(agents.name, name))).get() ?? null;
  }

  /** Agents a user may use in a project: their own and the shared ones. */
  usableBy(projectId: string, userId: string): Agent[] {
    return this.db
      .select()
      .from(agents)
      .where(and(eq(agents.projectId, projectId), or(eq(agents.ownerUserId, userId), eq(agents.shared, true))))
      .all();
  }

  /**
   * May this user use this agent? The one answer every route relies on: the
   * agent must exist in the project and be the user's own or shared. Returns
   * the agent, or null for every kind of "no" so callers cannot tell them apart.
   */
  usable(projectId: string, userId: string, agentId: string): Agent | null {
    const agent = this.get(projectId, agentId);
    if (!agent) return null;
    return agent.ownerUserId === userId || agent.shared ? agent : null;
  }

  /** The agent with this id in the project, regardless of who may use it (supervision). */
  get(projectId: string, agentId: string): Agent | null {
    return this.#byId.get({ agentId, projectId }) ?? null;
  }
}
