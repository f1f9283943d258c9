/**
 * Host credentials that uid 0 reads by plain ownership must stay out of every
 * tab, in both confinement modes (HOST_SECRET_PATHS already hides
 * /etc/credstore and /var/lib/systemd/credential.secret for that reason).
 * systemd decrypts a service's credentials into /run/credentials/<unit>/
 * (LoadCredential=, the usual way to hand hatch its HATCH_SECRET_KEY), and
 * Docker and Kubernetes mount secrets under /run/secrets and
 * /var/run/secrets (the service-account token). bwrap hides /run behind a
 * tmpfs; with Landlock alone (HATCH_CONFINEMENT=landlock, or a container
 * where bwrap cannot create its namespaces) nothing does.
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

for (const [confinement, mode] of Object.entries(MODES)) {
  describe(`HATCH_CONFINEMENT=${confinement}`, () => {
    test("a member's tab cannot read systemd's decrypted credentials, Docker secrets or the Kubernetes service-account token", async () => {
      const tag = crypto.randomUUID();
      const credentials = {
        systemd: join("/run/credentials", `hatch-review-${tag}.service`, "secret-key"),
        docker: join("/run/secrets", `hatch-review-${tag}`),
        kubernetes: join("/var/run/secrets", `hatch-review-${tag}.io`, "serviceaccount", "token"),
      };
      const cleanups = Object.entries(credentials).map(([kind, path]) => plantCredential(path, `${kind}-credential-${tag}`));
      try {
        await using world = await startWorld({ HATCH_CONFINEMENT: confinement });
        const project = await world.project();
        const member = await world.signedIn(project, "member");
        localSource(world, project, "docs", { member: "rwx" });
        const created = await createSession(member.client, { sourceSlug: "docs", id: "s" });
        expect({ status: created.status, confinement: created.body.confinement }).toEqual({ status: 201, confinement: mode });

        const probe = await member.client.post(`${TERMINAL}/sessions/s/exec`, {
          command: Object.values(credentials).map((path) => `cat ${path} 2>/dev/null; echo`).join("; "),
        });
        expect(probe.status).toBe(200);
        // Nothing of any credential: three empty lines.
        expect(probe.body.output).toBe("\n\n\n");
      } finally {
        for (const cleanup of cleanups) cleanup();
      }
    });
  });
}

for (const [confinement, mode] of Object.entries(MODES)) {
  describe(`HATCH_CONFINEMENT=${confinement}: root-only private keys under /etc`, () => {
    test("a member's tab cannot read the host's TLS keys from certbot or RHEL's /etc/pki, WireGuard keys, or the Kubernetes admin credentials", async () => {
      const tag = crypto.randomUUID();
      const credentials = {
        letsencrypt: join("/etc/letsencrypt/archive", `hatch-review-${tag}.example`, "privkey1.pem"),
        pki: join("/etc/pki/tls/private", `hatch-review-${tag}.key`),
        wireguard: join("/etc/wireguard", `hatch-review-${tag}.conf`),
        kubernetes: join("/etc/kubernetes", `hatch-review-${tag}`, "admin.conf"),
      };
      const cleanups = Object.entries(credentials).map(([kind, path]) => plantCredential(path, `${kind}-credential-${tag}`));
      try {
        await using world = await startWorld({ HATCH_CONFINEMENT: confinement });
        const project = await world.project();
        const member = await world.signedIn(project, "member");
        localSource(world, project, "docs", { member: "rwx" });
        const created = await createSession(member.client, { sourceSlug: "docs", id: "s" });
        expect({ status: created.status, confinement: created.body.confinement }).toEqual({ status: 201, confinement: mode });
        const probe = await member.client.post(`${TERMINAL}/sessions/s/exec`, {
          command: Object.values(credentials).map((path) => `cat ${path} 2>/dev/null; echo`).join("; "),
        });
        expect(probe.status).toBe(200);
        expect(probe.body.output).toBe("\n\n\n\n");
      } finally {
        for (const cleanup of cleanups) cleanup();
      }
    });
  });
}
