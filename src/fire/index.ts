/**
 * The fire endpoint and fire tokens: minting (`wfk1_`, shown once, salted hash
 * stored), rotation and revocation of webhook triggers, the per-address rate cap.
 */
export { MAX_FIRE_BODY_BYTES, readFireText } from "./fire-body.ts";
export { FIRE_TOKEN_BYTES, FIRE_TOKEN_PREFIX, fireTokenMatches, hashFireToken, isFireTokenShaped, mintFireToken, type MintedFireToken } from "./fire-token.ts";
export { DEFAULT_FIRE_RATE_PER_MINUTE, fireRoutes, type FireRoutesOptions } from "./routes.ts";
export { triggerRoutes } from "./trigger-routes.ts";
export { WebhookTokens, type IssuedToken } from "./webhook-tokens.ts";
