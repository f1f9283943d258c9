import { describe, expect, test } from "bun:test";
import { loadConfig } from "../../src/config.ts";
import { startHatch } from "../../src/main.ts";
import { tempDataDir } from "../helpers/cli.ts";
import { logIn, TEST_PASSWORD } from "../helpers/world.ts";

describe("login session lifetime", () => {
  // README, Configuration: HATCH_SESSION_TTL_HOURS is "Lifetime of a login session, 1 to 87,600 hours", and each
  // setting is read at start. Lowering it (after a leaked cookie, say) is the operator's only server-wide lever:
  // `hatch admin user password` ends one user's sign-ins at a time.
  test("a sign-in made under a longer HATCH_SESSION_TTL_HOURS ends once it is older than the lifetime in force", async () => {
    using dataDir = tempDataDir();
    const config = (ttlHours: string) => loadConfig({ HATCH_PORT: "0", HATCH_COMPANION_PORT: "0", HATCH_HOST: "127.0.0.1", HATCH_DATA_DIR: dataDir.path, HATCH_SESSION_TTL_HOURS: ttlHours });
    let cookie: string;
    {
      await using hatch = await startHatch(config("87600"));
      await hatch.platform.users.create("someone@example.com", TEST_PASSWORD);
      const client = await logIn(hatch.url, "someone@example.com");
      cookie = client.cookies.get("hatch_session")!;
    }
    // Restarted with a one-hour lifetime, two hours later.
    const later = Date.now() + 2 * 3600_000;
    await using hatch = await startHatch(config("1"), { now: () => later });
    const me = await fetch(`${hatch.url}/api/auth/me`, { headers: { cookie: `hatch_session=${cookie}` } });
    expect(me.status).toBe(401);
  });
});
