import { readdirSync } from "node:fs";
import { join } from "node:path";

/**
 * Host trees where every write is code that root runs later: the system's
 * programs, libraries and boot files, its configuration (cron.d, profile.d,
 * systemd units, sudoers.d, ld.so.preload) and the cron and at spools.
 * hatch runs as root on many machines and confined programs keep uid 0, so a
 * writable root inside one of these (a local source at /etc/cron.d, or at
 * /usr/local/bin, writable for its admins) would hand root of the host to
 * whoever may type in that tab, even where the operator revoked
 * terminal.container. The planner treats them as never writable. `/run` is
 * on the list too: root reads configuration there as it does in /etc
 * (modprobe.d, whose `install` lines run at the next module autoload, systemd
 * units, udev rules, tmpfiles.d), and its daemons' pid files and sockets.
 * `/opt`, `/srv` and `/var/lib` are left out: applications and their data live there.
 */
export const SYSTEM_CODE_PATHS: readonly string[] = ["/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/var/spool", "/run"];

/**
 * `SYSTEM_CODE_PATHS` and the dot entries directly in `home` (default root's):
 * `.ssh/authorized_keys`, `.bashrc`, `.profile`, `.config`, `.local/bin`,
 * `.gitconfig` are all code or logins for root. Only existing entries are
 * named: a new one could be created only through a root writable at `home`
 * itself, and `/root` is a system directory, never a writable root.
 */
export function systemCodePaths(home = "/root"): string[] {
  let names: string[];
  try {
    names = readdirSync(home);
  } catch {
    names = [];
  }
  return [...SYSTEM_CODE_PATHS, ...names.filter((name) => name.startsWith(".")).map((name) => join(home, name))];
}
