import { and, count, desc, eq, inArray, isNotNull, isNull, sql } from "drizzle-orm";
import { workflowTriggers, type Db } from "../db/index.ts";
import { conflict, newId, notFound } from "../platform/index.ts";

/** What fires a workflow: a webhook (bearer fire token) or a channel binding's message trigger. */
export type TriggerKind = "webhook" | "message";

/** A trigger as every API shows it: never the token, never its hash. */
export interface Trigger {
  id: string;
  workflowId: string;
  kind: TriggerKind;
  /** The channel binding owning a message trigger. */
  bindingId: string | null;
  createdAt: number;
  rotatedAt: number | null;
  revokedAt: number | null;
}

/** The stored form of a fire token: a salt and the salted hash (see src/fire/fire-token.ts), and no part of the token. */
export interface StoredTokenHash {
  salt: string;
  hash: string;
}

type Row = typeof workflowTriggers.$inferSelect;

/**
 * Live webhook triggers one workflow may hold. Every fire, a wrong token's
 * included, is checked against each of them (a slow hash apiece), so without
 * a cap a member could make every unauthenticated request expensive. One per
 * caller is the norm; rotating replaces a token without another trigger.
 */
export const MAX_WEBHOOK_TRIGGERS = 10;
/** Revoked webhook triggers a workflow keeps listed (the newest); older ones are deleted as another is revoked. */
export const KEPT_REVOKED_TRIGGERS = 20;

/**
 * The trigger store. It keeps token hashes opaque: minting and checking fire
 * tokens is the fire part's job, so the token format lives in one place.
 */
export class Triggers {
  /** Prepared once: every fire reads the workflow's live token hashes. */
  readonly #webhookHashes;

  constructor(
    private readonly db: Db,
    private readonly now: () => number = Date.now,
  ) {
    this.#webhookHashes = db
      .select({ triggerId: workflowTriggers.id, salt: workflowTriggers.tokenSalt, hash: workflowTriggers.tokenHash })
      .from(workflowTriggers)
      .where(and(eq(workflowTriggers.workflowId, sql.placeholder("workflowId")), eq(workflowTriggers.kind, "webhook"), isNull(workflowTriggers.revokedAt)))
      .prepare();
  }

  /** A new webhook trigger holding a token hash; 409 `too_many_triggers` past MAX_WEBHOOK_TRIGGERS live ones. */
  createWebhook(workflowId: string, token: StoredTokenHash): Trigger {
    const row: Row = {
      id: `tr-${newId()}`,
      workflowId,
      kind: "webhook",
      tokenSalt: token.salt,
      tokenHash: token.hash,
      bindingId: null,
      createdAt: this.now(),
      rotatedAt: null,
      revokedAt: null,
    };
    // IMMEDIATE: a deferred transaction whose write follows a read gets SQLITE_BUSY at once, without the busy
    // timeout, while another process (the CLI, or the server beside the CLI) writes.
    this.db.transaction(
      (tx) => {
        const { live } = tx
          .select({ live: count() })
          .from(workflowTriggers)
          .where(and(eq(workflowTriggers.workflowId, workflowId), eq(workflowTriggers.kind, "webhook"), isNull(workflowTriggers.revokedAt)))
          .get()!;
        if (live >= MAX_WEBHOOK_TRIGGERS) {
          throw conflict("too_many_triggers", `The workflow already has ${MAX_WEBHOOK_TRIGGERS} live webhook triggers: revoke one, or rotate its token instead`);
        }
        tx.insert(workflowTriggers).values(row).run();
      },
      { behavior: "immediate" },
    );
    return toTrigger(row);
  }

  /** Replace a live webhook trigger's hash: the old token stops matching at once. */
  replaceToken(triggerId: string, token: StoredTokenHash): Trigger {
    const row = this.db
      .update(workflowTriggers)
      .set({ tokenSalt: token.salt, tokenHash: token.hash, rotatedAt: this.now() })
      .where(and(eq(workflowTriggers.id, triggerId), eq(workflowTriggers.kind, "webhook"), isNull(workflowTriggers.revokedAt)))
      .returning()
      .get();
    if (!row) throw notFound("trigger_not_found", `Cannot rotate trigger "${triggerId}": no live webhook trigger has that id`);
    return toTrigger(row);
  }

  /**
   * Revoke a webhook trigger: its hash is wiped, the row stays for the runs it
   * fired. Only the latest KEPT_REVOKED_TRIGGERS revoked webhook triggers of a
   * workflow are kept (the audit log keeps every revocation): otherwise a
   * create-and-revoke loop would grow every fire's trigger read, and every
   * listing of the project's workflows, without bound.
   */
  revoke(triggerId: string): Trigger {
    // IMMEDIATE, as createWebhook: the write and the pruning see one state, and wait out another process's write.
    const row = this.db.transaction(
      (tx) => {
        const revoked = tx
          .update(workflowTriggers)
          .set({ tokenSalt: null, tokenHash: null, revokedAt: this.now() })
          .where(and(eq(workflowTriggers.id, triggerId), isNull(workflowTriggers.revokedAt)))
          .returning()
          .get();
        if (revoked?.kind === "webhook") {
          // Ids only, and never many: each revoke prunes, so at most one more than are kept.
          const older = tx
            .select({ id: workflowTriggers.id })
            .from(workflowTriggers)
            .where(and(eq(workflowTriggers.workflowId, revoked.workflowId), eq(workflowTriggers.kind, "webhook"), isNotNull(workflowTriggers.revokedAt)))
            .orderBy(desc(workflowTriggers.revokedAt), desc(workflowTriggers.id))
            .all()
            .slice(KEPT_REVOKED_TRIGGERS);
          if (older.length > 0) tx.delete(workflowTriggers).where(inArray(workflowTriggers.id, older.map((o) => o.id))).run();
        }
        return revoked;
      },
      { behavior: "immediate" },
    );
    if (!row) throw notFound("trigger_not_found", `Cannot revoke trigger "${triggerId}": no live trigger has that id`);
    return toTrigger(row);
  }

  /** The trigger with this id, or null. */
  get(id: string): Trigger | null {
    const row = this.db.select().from(workflowTriggers).where(eq(workflowTriggers.id, id)).get();
    return row ? toTrigger(row) : null;
  }

  /** Every trigger of a workflow, revoked ones included, oldest first. */
  list(workflowId: string): Trigger[] {
    return this.db.select().from(workflowTriggers).where(eq(workflowTriggers.workflowId, workflowId)).orderBy(workflowTriggers.createdAt).all().map(toTrigger);
  }

  /** The live webhook triggers of a workflow with their hashes: what a fire is checked against. */
  webhookHashes(workflowId: string): { triggerId: string; salt: string; hash: string }[] {
    return this.#webhookHashes
      .all({ workflowId })
      .filter((r): r is { triggerId: string; salt: string; hash: string } => r.salt !== null && r.hash !== null);
  }

  /**
   * Attach the system-managed message trigger of a channel binding (idempotent
   * for the same binding and workflow). Schedule edits never touch it.
   */
  addMessage(workflowId: string, bindingId: string): Trigger {
    const existing = this.db.select().from(workflowTriggers).where(eq(workflowTriggers.bindingId, bindingId)).get();
    if (existing && existing.workflowId !== workflowId) {
      throw conflict("binding_attached", `Cannot attach binding "${bindingId}": it already fires another workflow`);
    }
    if (existing) return toTrigger(existing);
    const row: Row = {
      id: `tr-${newId()}`,
      workflowId,
      kind: "message",
      tokenSalt: null,
      tokenHash: null,
      bindingId,
      createdAt: this.now(),
      rotatedAt: null,
      revokedAt: null,
    };
    this.db.insert(workflowTriggers).values(row).run();
    return toTrigger(row);
  }

  /** The message trigger a channel binding attached, or null. */
  byBinding(bindingId: string): Trigger | null {
    const row = this.db.select().from(workflowTriggers).where(eq(workflowTriggers.bindingId, bindingId)).get();
    return row ? toTrigger(row) : null;
  }

  /** Remove a binding's message trigger; true when there was one. The only way it disappears. */
  removeMessage(bindingId: string): boolean {
    return this.db.delete(workflowTriggers).where(eq(workflowTriggers.bindingId, bindingId)).returning({ id: workflowTriggers.id }).all().length > 0;
  }
}

function toTrigger(row: Row): Trigger {
  return {
    id: row.id,
    workflowId: row.workflowId,
    kind: row.kind,
    bindingId: row.bindingId,
    createdAt: row.createdAt,
    rotatedAt: row.rotatedAt,
    revokedAt: row.revokedAt,
  };
}
