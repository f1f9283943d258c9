/** What a terminal upgrade request addresses, parsed without trusting any of it. */
export interface TerminalUpgrade {
  sessionId: string;
  since: number | undefined;
  /** The session instance `since` was counted in (the hello's `instance`). */
  instance: string | undefined;
  agentId: string | undefined;
  userId: string | undefined;
  cookie: string | undefined;
}

/** Why an upgrade was refused before any handshake; logged, never echoed. */
export type UpgradeRejection = "bad_host" | "bad_path" | "encoded_session_id" | "bad_query";

const PATH = /^\/ws\/terminal\/([A-Za-z0-9_-]{1,64})$/;
const QUERY_VALUE = /^[A-Za-z0-9_-]{1,100}$/;

/**
 * Parse a terminal WebSocket upgrade. Anything malformed (an unparseable Host,
 * a percent-encoded session id, an unknown path) is a rejection, so the caller
 * destroys the socket with no handshake and no close code: a rejection never
 * reveals whether a session exists.
 */
export function parseTerminalUpgrade(headers: Record<string, string | string[] | undefined>, rawUrl: string | undefined): TerminalUpgrade | UpgradeRejection {
  const host = headers.host;
  if (typeof host !== "string" || !validHost(host)) return "bad_host";
  const url = rawUrl ?? "";
  const [path = "", query = ""] = splitOnce(url, "?");
  if (path.includes("%")) return "encoded_session_id";
  const match = PATH.exec(path);
  if (!match) return "bad_path";
  const params = new URLSearchParams(query);
  const since = params.get("since");
  const agentId = params.get("agentId") ?? undefined;
  const userId = params.get("userId") ?? undefined;
  const instance = params.get("instance") ?? undefined;
  if (since !== null && !/^\d{1,15}$/.test(since)) return "bad_query";
  if ([agentId, userId, instance].some((value) => value !== undefined && !QUERY_VALUE.test(value))) return "bad_query";
  const cookie = headers.cookie;
  return { sessionId: match[1]!, since: since === null ? undefined : Number(since), instance, agentId, userId, cookie: typeof cookie === "string" ? cookie : undefined };
}

function validHost(host: string): boolean {
  if (host.length === 0 || host.length > 255 || /[\s/\\@?#%]/.test(host)) return false;
  try {
    return new URL(`http://${host}/`).host !== "";
  } catch {
    return false;
  }
}

function splitOnce(value: string, separator: string): [string, string] {
  const at = value.indexOf(separator);
  return at < 0 ? [value, ""] : [value.slice(0, at), value.slice(at + 1)];
}
