/**
 * Host credentials that uid 0 reads by plain ownership must stay out of every
 * tab, in both confinement modes (HOST_SECRET_PATHS already hides
 * /etc/credstore and /var/lib/systemd/credential.secret for that reason).
 * systemd decrypts a service's credentials into /run/credentials/<unit>/
 * (LoadCredential=, the usual way to hand hatch its HATCH_SECRET_KEY), and
 * Docker and Kubernetes mount secrets under /run/secrets and
 * /var/run/secrets (the service-account token). bwrap hides /run behind a
 * tmpfs; with Landlock alone (HATCH_CONFINEMENT=landlock, or a container
 * where bwrap cannot create its namespaces) nothing does. The root-only keys
 * hosts keep under /etc and /var/lib (TLS, VPN, Kerberos, saved network
 * passwords, Kubernetes and k3s admin credentials) are hidden in both modes.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { TERMINAL, createSession, localSource } from "../helpers/terminal.ts";
import { startWorld } from "../helpers/world.ts";

const MODES = { auto: "landlock+bwrap", landlock: "landlock" } as const;

/** Write a 0400 root-owned credential at `path`, creating (and later removing) only what did not exist. */
function plantCredential(path: string, content: string): () => void {
  const created: string[] = [];
  for (let dir = dirname(path); !existsSync(dir); dir = dirname(dir)) created.push(dir);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, content, { mode: 0o400 });
  return () => (created.length > 0 ? rmSync(created.at(-1)!, { recursive: true, force: true }) : rmSync(path, { force: true }));
}

/**
 * A credential under each host secret path these tests cover, where hosts keep them: systemd's decrypted
 * credentials, Docker's and Kubernetes' mounted secrets, and the root-only keys under /etc and /var/lib (TLS,
 * VPN, Kerberos, saved network passwords, Kubernetes and k3s admin credentials).
 */
function credentialPaths(tag: string): Record<string, string> {
  return {
    systemd: join("/run/credentials", `hatch-review-${tag}.service`, "secret-key"),
    docker: join("/run/secrets", `hatch-review-${tag}`),
    kubernetesToken: join("/var/run/secrets", `hatch-review-${tag}.io`, "serviceaccount", "token"),
    letsencrypt: join("/etc/letsencrypt/archive", `hatch-review-${tag}.example`, "privkey1.pem"),
    pkiTls: join("/etc/pki/tls/private", `hatch-review-${tag}.key`),
    pkiCa: join("/etc/pki/CA/private", `hatch-review-${tag}.key`),
    wireguard: join("/etc/wireguard", `hatch-review-${tag}.conf`),
    openvpn: join("/etc/openvpn", `hatch-review-${tag}`, "server.key"),
    ipsecKeys: join("/etc/ipsec.d/private", `hatch-review-${tag}.pem`),
    ipsecSecrets: "/etc/ipsec.secrets",
    krb5: "/etc/krb5.keytab",
    networkManager: join("/etc/NetworkManager/system-connections", `hatch-review-${tag}.nmconnection`),
    kubernetesAdmin: join("/etc/kubernetes", `hatch-review-${tag}`, "admin.conf"),
    rancher: join("/etc/rancher", `hatch-review-${tag}`, "k3s.yaml"),
    kubelet: join("/var/lib/kubelet/pki", `hatch-review-${tag}.key`),
  };
}

for (const [confinement, mode] of Object.entries(MODES)) {
  describe(`HATCH_CONFINEMENT=${confinement}`, () => {
    test("a member's tab reads no host credential: systemd's, Docker's and Kubernetes' mounted secrets, nor the root-only TLS, VPN, Kerberos, network and cluster keys under /etc and /var/lib", async () => {
      const tag = crypto.randomUUID();
      const credentials = credentialPaths(tag);
      // A file this host has already (a real /etc/krb5.keytab) is left as it is: it must not be read either.
      const cleanups = Object.entries(credentials)
        .filter(([, path]) => !existsSync(path))
        .map(([kind, path]) => plantCredential(path, `${kind}-credential-${tag}`));
      try {
        await using world = await startWorld({ HATCH_CONFINEMENT: confinement });
        const project = await world.project();
        const member = await world.signedIn(project, "member");
        localSource(world, project, "docs", { member: "rwx" });
        const created = await createSession(member.client, { sourceSlug: "docs", id: "s" });
        expect({ status: created.status, confinement: created.body.confinement }).toEqual({ status: 201, confinement: mode });

        const probe = await member.client.post(`${TERMINAL}/sessions/s/exec`, {
          command: Object.keys(credentials).map((kind) => `cat ${credentials[kind]} >/dev/null 2>&1 && echo ${kind}`).join("; ") + "; echo end",
        });
        expect(probe.status).toBe(200);
        // Not one could be read.
        expect(probe.body.output).toBe("end\n");
      } finally {
        for (const cleanup of cleanups) cleanup();
      }
    });
  });
}
