import { describe, expect, spyOn, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../../src/db/index.ts";
import { hashPassword } from "../../src/platform/password.ts";
import { Users } from "../../src/platform/index.ts";
import { hatchCli, tempDataDir } from "../helpers/cli.ts";
import { startWorld, TEST_PASSWORD } from "../helpers/world.ts";

// "josé" typed on most keyboards (U+00E9) and pasted from a macOS file name or some mail clients (e + U+0301).
const COMPOSED = "jos\u00e9@example.com";
const DECOMPOSED = "jose\u0301@example.com";

describe("email addresses", () => {
  test("one address in its composed and decomposed Unicode spellings is one user: never two look-alike accounts, and either spelling signs in", async () => {
    await using world = await startWorld();
    const user = await world.platform.users.create(COMPOSED, TEST_PASSWORD);
    const second = await world.platform.users.create(DECOMPOSED, "another password 2").then(
      (created) => ({ created: created.id }),
      (error: { code?: string }) => ({ refused: error.code }),
    );
    expect(second).toEqual({ refused: "user_exists" });
    const login = await world.anonymous().post("/api/auth/login", { email: DECOMPOSED, password: TEST_PASSWORD });
    expect({ status: login.status, user: login.body.user?.id }).toEqual({ status: 200, user: user.id });
  });

  test("an address with an invisible character (a control, a zero-width mark, a bidirectional override) is refused: it would look like another", async () => {
    await using world = await startWorld();
    for (const email of ["ad\u200bmin@example.com", "admin@exam\u202eelp.com", "ad\x01min@example.com", "admin\ufeff@example.com"]) {
      const refused = await world.platform.users.create(email, TEST_PASSWORD).then(
        () => null,
        (error: { code?: string; message?: string }) => ({ code: error.code, escaped: !/[\u0000-\u001f\u200b\u202e\ufeff]/.test(error.message ?? "") }),
      );
      expect({ email: JSON.stringify(email), refused }).toEqual({ email: JSON.stringify(email), refused: { code: "invalid_email", escaped: true } });
    }
  });

  test("an address stored in another spelling before (decomposed, upper case) is found by its one spelling; one that would collide keeps its own and is logged", async () => {
    const dir = mkdtempSync(join(tmpdir(), "hatch-users-"));
    const warned = spyOn(console, "warn").mockImplementation(() => {});
    try {
      const { db, sqlite } = openDatabase(join(dir, "hatch.db"));
      // Rows as an older hatch, which only lower-cased, could have left them; the second and third are one address.
      const insert = sqlite.prepare("INSERT INTO users (id, email, password_hash, created_at) VALUES (?, ?, 'x', 0)");
      insert.run("u1", "ren\u00e9e@example.com".normalize("NFD"));
      insert.run("u2", COMPOSED);
      insert.run("u3", DECOMPOSED);
      const users = new Users(db);
      expect({
        renee: users.findByEmail("REN\u00c9E@example.com")?.id,
        jose: users.findByEmail(COMPOSED)?.id,
        // The row that kept its own spelling is still found by exactly that spelling.
        kept: users.findByEmail(DECOMPOSED)?.id,
        stored: sqlite.query("SELECT email FROM users WHERE id = 'u3'").get(),
        logged: warned.mock.calls.map((call) => String(call[0]).includes("user u3")),
      }).toEqual({ renee: "u1", jose: "u2", kept: "u3", stored: { email: DECOMPOSED }, logged: [true] });
      sqlite.close();
    } finally {
      warned.mockRestore();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * The database of an older hatch (which only lower-cased) in `dir`, holding one address in two spellings: two
 * people, "composed" and "decomposed", each with "<id> password". The open database is returned.
 */
async function oneAddressTwice(dir: string) {
  const { sqlite } = openDatabase(join(dir, "hatch.db"));
  const insert = sqlite.prepare("INSERT INTO users (id, email, password_hash, created_at) VALUES (?, ?, ?, 0)");
  insert.run("composed", COMPOSED, await hashPassword("composed password"));
  insert.run("decomposed", DECOMPOSED, await hashPassword("decomposed password"));
  return sqlite;
}

describe("email addresses kept in an older spelling", () => {
  test("a row that kept its own spelling at the respelling is the one `admin user password --email <that spelling>` changes, not the other user", async () => {
    using dir = tempDataDir();
    const warned = spyOn(console, "warn").mockImplementation(() => {});
    try {
      const sqlite = await oneAddressTwice(dir.path);
      const hashes = () => sqlite.query("SELECT id, password_hash AS hash FROM users ORDER BY id").all() as { id: string; hash: string }[];
      const before = hashes();
      // The operator reads the start-up warning and resets the row it names, by the spelling it kept.
      const result = await hatchCli(dir.path, ["admin", "user", "password", "--email", DECOMPOSED, "--password", "brand new password"]);
      const after = hashes();
      const changed = after.filter((row, i) => row.hash !== before[i]!.hash).map((row) => row.id);
      sqlite.close();
      expect({ code: result.code, changed }).toEqual({ code: 0, changed: ["decomposed"] });
    } finally {
      warned.mockRestore();
    }
  });

  test("a row that kept its own spelling at the respelling still signs in with exactly that spelling, as Users.#respellStored promises", async () => {
    const dir = mkdtempSync(join(tmpdir(), "hatch-users-"));
    const warned = spyOn(console, "warn").mockImplementation(() => {});
    try {
      (await oneAddressTwice(dir)).close();
      await using world = await startWorld({ HATCH_DATA_DIR: dir });
      const login = await world.anonymous().post("/api/auth/login", { email: DECOMPOSED, password: "decomposed password" });
      expect({ status: login.status, user: login.body.user?.id }).toEqual({ status: 200, user: "decomposed" });
    } finally {
      warned.mockRestore();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("invisible characters in an address", () => {
  test("a soft hyphen, a combining grapheme joiner, a Mongolian vowel separator or a Unicode tag character is refused like a zero-width space: each shows as admin@example.com", async () => {
    await using world = await startWorld();
    const accepted: string[] = [];
    for (const email of ["ad\u00admin@example.com", "ad\u034fmin@example.com", "ad\u180emin@example.com", "admin\u{e0041}@example.com"]) {
      const created = await world.platform.users.create(email, TEST_PASSWORD).then(
        () => true,
        () => false,
      );
      if (created) accepted.push(JSON.stringify(email));
    }
    expect(accepted).toEqual([]);
  });
});
