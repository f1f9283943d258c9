/** Methods that change nothing, so a cross-origin browser may send them (their answers stay unreadable to it). */
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Is this a browser request that another site's page, or another origin on
 * this site, made in a signed-in user's name? The session cookie is SameSite
 * Lax, which stops other sites but not a page on another port or subdomain of
 * the same site: a plain HTML form there can POST to any route with the cookie
 * (a form-encoded exec ran a command). Unsafe methods from a browser are
 * accepted only from this origin or one listed in `allowed`.
 *
 * The rule is Go's `net/http.CrossOriginProtection`: a browser marks the
 * request with `Sec-Fetch-Site` (`same-origin`, or `none` when the user typed
 * it); an older one sends `Origin`, which must name the requested host. A
 * request with neither is not a browser acting for someone (curl, the CLI,
 * webhooks, the fire endpoint's callers).
 */
export function isCrossOriginRequest(method: string, headers: Headers, allowed: ReadonlySet<string>): boolean {
  if (SAFE_METHODS.has(method)) return false;
  const origin = headers.get("origin");
  if (origin !== null && allowed.has(origin)) return false;
  const site = headers.get("sec-fetch-site");
  if (site !== null) return site !== "same-origin" && site !== "none";
  if (origin === null) return false;
  try {
    return new URL(origin).host !== headers.get("host");
  } catch {
    return true; // "null": a sandboxed frame or a file: page
  }
}
