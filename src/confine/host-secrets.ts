import { readdirSync } from "node:fs";
import { join } from "node:path";

/**
 * Host files that uid 0 can read by plain ownership, no capability needed.
 * hatch runs as root, and both modes keep uid 0 (bwrap maps it to itself;
 * Landlock alone leaves it), so a confined shell would otherwise read these
 * through the read-only view of `/`. The planner hides every one that exists,
 * unless the caller passes its own list. A root may still live below one (a
 * source under /root/src): it is mounted and granted explicitly on top.
 *
 * Running the service under its own unprivileged user is the stronger fix:
 * then ordinary file permissions protect all of these.
 */
export const HOST_SECRET_PATHS: readonly string[] = [
  // The service account's home: cloud, SSH, git and registry credentials.
  "/root",
  // Password hashes and their backups.
  "/etc/shadow",
  "/etc/shadow-",
  "/etc/gshadow",
  "/etc/gshadow-",
  // Privilege policy, and SSH host private keys (impersonating the host).
  "/etc/sudoers",
  "/etc/sudoers.d",
  "/etc/ssh",
  // TLS private keys (Debian's, RHEL's, certbot's) and systemd credentials.
  "/etc/ssl/private",
  "/etc/pki/tls/private",
  "/etc/pki/CA/private",
  "/etc/letsencrypt",
  "/etc/credstore",
  "/etc/credstore.encrypted",
  "/var/lib/systemd/credential.secret",
  // VPN and Kerberos keys, saved Wi-Fi and VPN passwords.
  "/etc/wireguard",
  "/etc/openvpn",
  "/etc/ipsec.secrets",
  "/etc/ipsec.d/private",
  "/etc/krb5.keytab",
  "/etc/NetworkManager/system-connections",
  // Kubernetes and k3s: cluster-admin kubeconfigs, the cluster's CA and the kubelet's client keys.
  "/etc/kubernetes",
  "/etc/rancher",
  "/var/lib/kubelet/pki",
  // Where they are while services run: systemd's decrypted credentials (LoadCredential=, a natural home for
  // HATCH_SECRET_KEY), Docker's secrets and Kubernetes' service-account token. bwrap hides /run anyway.
  "/run/credentials",
  "/run/secrets",
  "/var/run/secrets",
  // Container runtimes' state: other containers' filesystems and secrets.
  "/var/lib/docker",
  "/var/lib/containerd",
  // Logs (auth, shell history of other tools), backups and crontabs.
  "/var/log",
  "/var/backups",
  "/var/spool/cron",
];

/**
 * The `.env` files (`.env`, `.env.local`, `.env.production`, ...) directly in
 * `dirs`: Bun loads them from the directory the service starts in, so an
 * operator's HATCH_SECRET_KEY or API keys often live there, in a checkout every
 * tab can otherwise read. The composition root hides them like the data dir.
 */
export function dotenvFiles(dirs: readonly string[]): string[] {
  const found = new Set<string>();
  for (const dir of dirs) {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      continue;
    }
    for (const name of names) if (name === ".env" || name.startsWith(".env.")) found.add(join(dir, name));
  }
  return [...found];
}
