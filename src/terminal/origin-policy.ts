/** Which web pages may open a terminal WebSocket; see `originPolicy`. */
export type OriginPolicy = (origin: string | undefined, host: string) => boolean;

/** What decides the pages a terminal WebSocket serves. */
export interface OriginPolicyOptions {
  /** The web host's port: the terminal widget is served from it, on the companion's host name. */
  webPort(): number;
  /** Further page origins allowed (HATCH_ALLOWED_ORIGINS), as `scheme://host[:port]`. */
  allowed: readonly string[];
}

/**
 * A browser sends the session cookie with a WebSocket upgrade from any page,
 * and the same-origin policy does not cover WebSockets: without this check, a
 * page on another port of the same host (same site, so even a SameSite cookie
 * goes along) could drive a victim's terminal. A browser always names the
 * page's origin; a request without one (the CLI, scripts) is not a browser
 * acting for someone else. Allowed: the web host's origin on the companion's
 * host name, the companion's own origin (a proxy serving both on one host),
 * and the configured list. The scheme is not compared: TLS is often ended at a
 * proxy in front of both.
 */
export function originPolicy(options: OriginPolicyOptions): OriginPolicy {
  const allowed = new Set(options.allowed.map((origin) => new URL(origin).origin));
  return (origin, host) => {
    if (origin === undefined) return true;
    let page: URL;
    try {
      page = new URL(origin);
    } catch {
      return false; // "null" (sandboxed frames, file: pages) and anything unparseable
    }
    if (page.protocol !== "http:" && page.protocol !== "https:") return false;
    if (allowed.has(page.origin)) return true;
    let target: URL;
    try {
      // Read the Host header in the page's scheme, so a missing port means the same default.
      target = new URL(`${page.protocol}//${host}/`);
    } catch {
      return false;
    }
    if (page.hostname !== target.hostname) return false;
    const port = effectivePort(page);
    return port === effectivePort(target) || port === options.webPort();
  };
}

function effectivePort(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
}
