/** Read, write, execute: what a URI-policy rule grants or denies. */
export interface Permissions {
  read: boolean;
  write: boolean;
  exec: boolean;
}

/** No permission at all. */
export const NONE: Permissions = Object.freeze({ read: false, write: false, exec: false });

/** Parse `r`, `rw`, `rwx`, `x`... into the set of letters; null when malformed. */
export function parsePerms(text: string): string | null {
  if (!/^[rwx]{1,3}$/.test(text) || new Set(text).size !== text.length) return null;
  return ["r", "w", "x"].filter((p) => text.includes(p)).join("");
}

/** Render permissions as `rwx` letters (`-` for none). */
export function formatPerms(p: Permissions): string {
  return `${p.read ? "r" : ""}${p.write ? "w" : ""}${p.exec ? "x" : ""}` || "-";
}
