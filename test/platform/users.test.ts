import { describe, expect, spyOn, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../../src/db/index.ts";
import { Users } from "../../src/platform/index.ts";
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
        jose: users.findByEmail(DECOMPOSED)?.id,
        kept: sqlite.query("SELECT email FROM users WHERE id = 'u3'").get(),
        logged: warned.mock.calls.map((call) => String(call[0]).includes("user u3")),
      }).toEqual({ renee: "u1", jose: "u2", kept: { email: DECOMPOSED }, logged: [true] });
      sqlite.close();
    } finally {
      warned.mockRestore();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
