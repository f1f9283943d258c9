import type { Trigger, Triggers } from "../workflows/index.ts";
import { fireTokenMatches, isFireTokenShaped, mintFireToken } from "./fire-token.ts";

/** A trigger with the token just minted for it: the only time the token is ever shown. */
export interface IssuedToken {
  trigger: Trigger;
  token: string;
}

/** Salt hashed when there is nothing to compare against, so an unknown workflow costs what a known one does. */
const DECOY_SALT = "decoy-salt-for-equal-timing";

/** Issues, rotates and checks the fire tokens of webhook triggers. */
export class WebhookTokens {
  constructor(private readonly triggers: Triggers) {}

  /** A new webhook trigger for the workflow, with its token. */
  issue(workflowId: string): IssuedToken {
    const { token, stored } = mintFireToken();
    return { trigger: this.triggers.createWebhook(workflowId, stored), token };
  }

  /** A new token for a live webhook trigger; the old one stops working at once. */
  rotate(triggerId: string): IssuedToken {
    const { token, stored } = mintFireToken();
    return { trigger: this.triggers.replaceToken(triggerId, stored), token };
  }

  /**
   * The id of the live webhook trigger of `workflowId` that `token` belongs to,
   * or null. A wrong, revoked or rotated-out token and an unknown workflow all
   * give null after the same work (at least one hash).
   */
  authenticate(workflowId: string, token: string | null): string | null {
    const candidates = this.triggers.webhookHashes(workflowId);
    const presented = token && isFireTokenShaped(token) ? token : null;
    if (candidates.length === 0 || presented === null) {
      fireTokenMatches(token ?? "", DECOY_SALT, "");
      return null;
    }
    let match: string | null = null;
    for (const candidate of candidates) {
      if (fireTokenMatches(presented, candidate.salt, candidate.hash)) match ??= candidate.triggerId;
    }
    return match;
  }
}
