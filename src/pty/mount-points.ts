import { readFile } from "node:fs/promises";

/**
 * Mount points at or below `dir`, read from /proc/self/mountinfo (the mount
 * namespace the server runs in). A recursive removal crosses into a mount: a
 * session that bind-mounted or NFS-mounted something into its scratch dir
 * would have that data deleted with it. Empty where /proc cannot be read.
 *
 * @example
 * await mountsAtOrBelow("/srv/hatch/data/scratch/hatch-scratch-ab…") // ["/srv/…/hatch-scratch-ab…/m"]
 */
export async function mountsAtOrBelow(dir: string): Promise<string[]> {
  const table = await readFile("/proc/self/mountinfo", "utf8").catch(() => "");
  const mounts: string[] = [];
  for (const line of table.split("\n")) {
    // Field 5 is the mount point.
    const field = line.split(" ")[4];
    if (!field) continue;
    const point = unescapeMountPath(field);
    if (point === dir || point.startsWith(`${dir}/`)) mounts.push(point);
  }
  return mounts;
}

/** A path as mountinfo writes it, with space, tab, newline and backslash as octal escapes (`\040`), read back. */
export function unescapeMountPath(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}
