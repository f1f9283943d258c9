import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { adminCommands, runCli } from "../../src/cli/index.ts";
import { loadConfig } from "../../src/config.ts";
import { DATABASE_FILE } from "../../src/db/index.ts";
import { startHatch } from "../../src/main.ts";
import { loadSecretKey, MAX_SECRETS_PER_SCOPE } from "../../src/platform/index.ts";
import { startWorld, TEST_PASSWORD } from "../helpers/world.ts";

describe("secrets", () => {
  test("a stored secret is encrypted at rest, listed without its value, and readable only by server code", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const value = "sk-test-0123456789-very-secret";
    const put = await member.client.put("/api/secrets/user/openai.apiKey", { value });
    expect(put.status).toBe(200);
    expect(JSON.stringify(put.body)).not.toContain(value);
    const list = await member.client.get("/api/secrets");
    expect(list.body.secrets).toEqual([{ scope: "user", id: "openai.apiKey", updatedAt: expect.any(Number) }]);
    expect(JSON.stringify(list.body)).not.toContain(value);
    const raw = world.hatch.sqlite.query("SELECT ciphertext FROM secrets").all() as { ciphertext: Uint8Array }[];
    expect(Buffer.from(raw[0]!.ciphertext).toString("latin1")).not.toContain(value);
    expect(await world.platform.secrets.reveal("user", member.user.id, "openai.apiKey")).toBe(value);
  });

  test("the generated key file is mode 0600 and a HATCH_SECRET_KEY shorter than 32 characters is refused", async () => {
    await using world = await startWorld();
    expect(statSync(join(world.config.dataDir, "secret.key")).mode & 0o777).toBe(0o600);
    await expect(startWorld({ HATCH_SECRET_KEY: "short" })).rejects.toThrow("at least 32 characters");
  });

  test("processes generating the key file at once (the server and the CLI on a new data dir) all use the one key that was written", async () => {
    // Each encrypts the same text under the same IV: the same ciphertext means the same key.
    const script = (dataDir: string, at: number) => `
      const { loadSecretKey } = await import(${JSON.stringify(join(import.meta.dir, "../../src/platform/index.ts"))});
      await Bun.sleep(${at} - Date.now());
      try {
        const { key } = await loadSecretKey({ secretKey: null, dataDir: ${JSON.stringify(dataDir)} });
        const sealed = await crypto.subtle.encrypt({ name: "AES-GCM", iv: new Uint8Array(12) }, key, new TextEncoder().encode("probe"));
        console.log(Buffer.from(sealed).toString("base64"));
      } catch (error) {
        console.log(error.message);
      }`;
    // A race: several rounds of several processes that start loading together, so that one that was lost to it shows.
    for (let round = 0; round < 5; round++) {
      const dataDir = mkdtempSync(join(tmpdir(), "hatch-key-"));
      try {
        const at = Date.now() + 500;
        const children = Array.from({ length: 5 }, () => Bun.spawn([process.execPath, "-e", script(dataDir, at)], { stdout: "pipe", stderr: "inherit" }));
        const outcomes = (await Promise.all(children.map((child) => new Response(child.stdout).text()))).map((out) => out.trim());
        const [first] = outcomes;
        expect(first).toMatch(/^[A-Za-z0-9+/]{28}=*$/);
        expect(outcomes).toEqual(children.map(() => first!));
        expect(readdirSync(dataDir)).toEqual(["secret.key"]);
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    }
  });

  test("an empty or truncated key file is refused at start, not hashed into a key anyone can compute", async () => {
    for (const content of ["", "\n", Buffer.alloc(16).toString("base64")]) {
      const dataDir = mkdtempSync(join(tmpdir(), "hatch-key-"));
      try {
        writeFileSync(join(dataDir, "secret.key"), content, { mode: 0o600 });
        await expect(loadSecretKey({ secretKey: null, dataDir })).rejects.toThrow("not 32 (restore it from backup");
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    }
  });

  describe("a data dir's secrets are sealed with one key: starting with another is refused, not run with secrets nobody can read", () => {
    const MISMATCH = "is not the one this data dir's secrets were sealed with";
    const dataDirOf = () => {
      const dir = mkdtempSync(join(tmpdir(), "hatch-key-"));
      return Object.assign(dir, { [Symbol.dispose]: () => rmSync(dir, { recursive: true, force: true }) });
    };
    const config = (dataDir: string, env: Record<string, string> = {}) => loadConfig({ HATCH_PORT: "0", HATCH_COMPANION_PORT: "0", HATCH_DATA_DIR: dataDir, ...env });
    /** Start on the data dir, store a project secret, stop. */
    async function withSecret(dataDir: string, env: Record<string, string> = {}) {
      await using hatch = await startHatch(config(dataDir, env));
      const owner = await hatch.platform.users.create("owner@example.com", TEST_PASSWORD);
      const project = hatch.platform.projects.create("p", "P", owner.id);
      await hatch.platform.secrets.put("project", project.id, "openai.key", "sk-live-1234567890");
      return project.id;
    }
    const NEW_KEY = { HATCH_SECRET_KEY: "a-brand-new-key-of-more-than-32-characters" };

    test("HATCH_SECRET_KEY set after running on the generated key file: serve and the CLI refuse; the old key still works", async () => {
      using dataDir = dataDirOf();
      const projectId = await withSecret(dataDir);
      await expect(startHatch(config(dataDir, NEW_KEY))).rejects.toThrow(MISMATCH);
      let err = "";
      const cli = await runCli(["admin", "setting", "get", "--json"], adminCommands, { env: { HATCH_DATA_DIR: dataDir, ...NEW_KEY }, stdin: async () => "", io: { out: () => {}, err: (t) => (err += t) } });
      expect({ cli, error: JSON.parse(err).error }).toEqual({ cli: 1, error: { code: "data_dir_unusable", message: expect.stringContaining(MISMATCH) } });
      // Nothing was changed by the refusals: the right key starts and reads the secret.
      await using hatch = await startHatch(config(dataDir));
      expect(await hatch.platform.secrets.reveal("project", projectId, "openai.key")).toBe("sk-live-1234567890");
    });

    test("the generated secret.key's contents, moved into HATCH_SECRET_KEY, open what it sealed, for serve and the CLI", async () => {
      using dataDir = dataDirOf();
      const projectId = await withSecret(dataDir);
      const keyFile = join(dataDir, "secret.key");
      const moved = { HATCH_SECRET_KEY: readFileSync(keyFile, "utf8").trim() };
      // Out of the data dir, into the environment (a container platform's secret).
      rmSync(keyFile);
      {
        await using hatch = await startHatch(config(dataDir, moved));
        expect(await hatch.platform.secrets.reveal("project", projectId, "openai.key")).toBe("sk-live-1234567890");
        await hatch.platform.secrets.put("project", projectId, "bot.token", "123456:ABC");
      }
      const cli = await runCli(["admin", "setting", "get", "--json"], adminCommands, { env: { HATCH_DATA_DIR: dataDir, ...moved }, stdin: async () => "", io: { out: () => {}, err: () => {} } });
      expect(cli).toBe(0);
      await using again = await startHatch(config(dataDir, moved));
      expect(await again.platform.secrets.reveal("project", projectId, "bot.token")).toBe("123456:ABC");
      expect(existsSync(keyFile)).toBe(false);
    });

    test("a HATCH_SECRET_KEY in the key file's form (openssl rand -base64 32), set from the first start, keeps opening what it sealed", async () => {
      using dataDir = dataDirOf();
      const own = { HATCH_SECRET_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64") };
      const projectId = await withSecret(dataDir, own);
      {
        await using hatch = await startHatch(config(dataDir, own));
        expect(await hatch.platform.secrets.reveal("project", projectId, "openai.key")).toBe("sk-live-1234567890");
      }
      // Another key of the same form is still another key.
      const other = { HATCH_SECRET_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64") };
      await expect(startHatch(config(dataDir, other))).rejects.toThrow(MISMATCH);
    });

    test("a lost or regenerated secret.key is refused while secrets are stored, and taken when none are", async () => {
      using stored = dataDirOf();
      const projectId = await withSecret(stored);
      const keyFile = join(stored, "secret.key");
      const backup = readFileSync(keyFile);
      rmSync(keyFile);
      await expect(startHatch(config(stored))).rejects.toThrow(MISMATCH);
      // The key the refused start generated is not left behind to be mistaken for the real one.
      expect(existsSync(keyFile)).toBe(false);
      const cli = await runCli(["admin", "setting", "get"], adminCommands, { env: { HATCH_DATA_DIR: stored }, stdin: async () => "", io: { out: () => {}, err: () => {} } });
      expect({ cli, keyFileLeft: existsSync(keyFile) }).toEqual({ cli: 1, keyFileLeft: false });
      writeFileSync(keyFile, backup, { mode: 0o600 });
      await using restored = await startHatch(config(stored));
      expect(await restored.platform.secrets.reveal("project", projectId, "openai.key")).toBe("sk-live-1234567890");

      using empty = dataDirOf();
      await (await startHatch(config(empty))).stop();
      rmSync(join(empty, "secret.key"));
      await using hatch = await startHatch(config(empty));
      expect(await hatch.platform.secrets.put("user", "u1", "k", "v")).toMatchObject({ id: "k" });
    });

    test("the CLI never takes a new key: run beside a server without its HATCH_SECRET_KEY, it is refused and changes nothing, even while no secret is stored", async () => {
      using dataDir = dataDirOf();
      const serverKey = { HATCH_SECRET_KEY: "the-server's-own-key-of-more-than-32-characters" };
      const server = await startHatch(config(dataDir, serverKey));
      // An operator's shell (ssh, beside a systemd unit) lacks the server's variable: the CLI would generate secret.key.
      let err = "";
      const cli = await runCli(["admin", "setting", "get", "--json"], adminCommands, { env: { HATCH_DATA_DIR: dataDir }, stdin: async () => "", io: { out: () => {}, err: (t) => (err += t) } });
      expect({ cli, error: JSON.parse(err).error, keyFile: existsSync(join(dataDir, "secret.key")) }).toEqual({
        cli: 1,
        error: { code: "data_dir_unusable", message: expect.stringContaining(MISMATCH) },
        keyFile: false,
      });
      // The running server goes on sealing with its key, and starts again on it.
      await server.platform.secrets.put("project", "p", "api-key", "sk-live-value");
      await server.stop();
      await using restarted = await startHatch(config(dataDir, serverKey));
      expect(await restarted.platform.secrets.reveal("project", "p", "api-key")).toBe("sk-live-value");
    });

    test("a database from before the check is judged by a secret it holds", async () => {
      using dataDir = dataDirOf();
      await withSecret(dataDir);
      const forget = () => {
        using db = new Database(join(dataDir, DATABASE_FILE));
        db.run("DELETE FROM secret_key_check");
      };
      forget();
      await expect(startHatch(config(dataDir, NEW_KEY))).rejects.toThrow(MISMATCH);
      forget();
      await (await startHatch(config(dataDir))).stop();
      // That start sealed its check: the wrong key is refused by it now.
      await expect(startHatch(config(dataDir, NEW_KEY))).rejects.toThrow(MISMATCH);
    });
  });

  test("project secrets need an owner or admin; a bad id gets 400; deleting an absent secret gets 404", async () => {
    await using world = await startWorld({ HATCH_SECRET_KEY: "a-test-key-of-more-than-32-characters" });
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const admin = await world.signedIn(project, "admin");
    expect((await member.client.put("/api/secrets/project/shared.token", { value: "x" })).status).toBe(403);
    expect((await admin.client.put("/api/secrets/project/shared.token", { value: "x" })).status).toBe(200);
    expect((await admin.client.put("/api/secrets/project/bad%20id", { value: "x" })).status).toBe(400);
    expect((await admin.client.put("/api/secrets/galaxy/x", { value: "x" })).status).toBe(400);
    // Valid JSON, but no UTF-8 can hold it: it would be read back changed, so it is refused, not stored.
    const loneSurrogate = await member.client.put("/api/secrets/user/odd", '{"value":"sk-\\ud800-tail"}');
    expect({ status: loneSurrogate.status, code: loneSurrogate.body.error.code }).toEqual({ status: 400, code: "invalid_secret_value" });
    expect(world.platform.secrets.list("user", member.user.id)).toEqual([]);
    expect((await member.client.delete("/api/secrets/user/absent")).status).toBe(404);
    expect((await member.client.get("/api/secrets?scope=project")).status).toBe(403);
    expect((await admin.client.get("/api/secrets?scope=project")).body.secrets.map((s: { id: string }) => s.id)).toEqual(["shared.token"]);
  });

  test("a user's own secrets need no project: one removed from their last project still lists and deletes them; project secrets still need one", async () => {
    await using world = await startWorld({ HATCH_SECRET_KEY: "a-test-key-of-more-than-32-characters" });
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const admin = await world.signedIn(project, "admin");
    expect((await member.client.put("/api/secrets/user/telegram.botToken", { value: "123:abc" })).status).toBe(200);
    world.platform.projects.removeMember(project.id, member.user.id);

    const listed = await member.client.get("/api/secrets");
    expect({ status: listed.status, ids: listed.body.secrets?.map((s: { id: string }) => s.id) }).toEqual({ status: 200, ids: ["telegram.botToken"] });
    expect((await member.client.put("/api/secrets/user/other", { value: "v" })).status).toBe(200);
    expect((await member.client.delete("/api/secrets/user/telegram.botToken")).status).toBe(200);
    for (const response of [await member.client.get("/api/secrets?scope=project"), await member.client.put("/api/secrets/project/x", { value: "v" })]) {
      expect({ status: response.status, code: response.body.error.code }).toEqual({ status: 403, code: "no_project" });
    }
    // A member's personal secrets are theirs: their names stay out of the project's audit log, which its admins read.
    const projectLog = (await admin.client.get("/api/audit")).body.entries.filter((e: { action: string }) => e.action.startsWith("secret."));
    expect(projectLog).toEqual([]);
    const serverWide = world.platform.audit.query({ projectId: null, action: "secret.put" });
    expect(serverWide.map((e) => ({ userId: e.userId, target: e.target }))).toEqual([
      { userId: member.user.id, target: "user:other" },
      { userId: member.user.id, target: "user:telegram.botToken" },
    ]);
  });

  test("a scope holds at most 200 secrets: one more is refused with 409 too_many_secrets and not stored, a replacement still goes in, and a delete makes room", async () => {
    await using world = await startWorld({ HATCH_SECRET_KEY: "a-test-key-of-more-than-32-characters" });
    const member = await world.signedIn(await world.project(), "member");
    // Filled through the store (the route's 200 answers are tested above); the route decides the one past the cap.
    for (let i = 0; i < MAX_SECRETS_PER_SCOPE; i++) world.platform.secrets.store(await world.platform.secrets.seal("user", member.user.id, `k${i}`, "v"));
    const refused = await member.client.put("/api/secrets/user/one-more", { value: "v" });
    expect({ status: refused.status, code: refused.body.error.code }).toEqual({ status: 409, code: "too_many_secrets" });
    expect(world.platform.secrets.list("user", member.user.id)).toHaveLength(MAX_SECRETS_PER_SCOPE);
    expect((await member.client.put("/api/secrets/user/k7", { value: "replaced" })).status).toBe(200);
    expect((await member.client.delete("/api/secrets/user/k0")).status).toBe(200);
    expect((await member.client.put("/api/secrets/user/one-more", { value: "v" })).status).toBe(200);
    // Another user's scope is a scope of its own.
    const other = await world.signedIn(await world.project("other"), "member");
    expect((await other.client.put("/api/secrets/user/mine", { value: "v" })).status).toBe(200);
  });
});
