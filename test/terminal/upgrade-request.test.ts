import { describe, expect, test } from "bun:test";
import { RejectionLog } from "../../src/terminal/rejection-log.ts";
import { parseTerminalUpgrade } from "../../src/terminal/upgrade-request.ts";

describe("parsing a terminal upgrade", () => {
  test("a well-formed upgrade yields the session id, offset and its instance, agent, user and cookie", () => {
    expect(parseTerminalUpgrade({ host: "hatch.example:3101", cookie: "a=1; hatch_session=abc" }, "/ws/terminal/s-1_x?since=42&instance=Ab-9_x&agentId=ag1&userId=u1")).toEqual({
      sessionId: "s-1_x",
      since: 42,
      instance: "Ab-9_x",
      agentId: "ag1",
      userId: "u1",
      cookie: "a=1; hatch_session=abc",
    });
  });

  test("an unparseable Host, a percent-encoded id, another path or a bad query is a rejection", () => {
    const ok = { host: "127.0.0.1:3101" };
    expect(parseTerminalUpgrade({}, "/ws/terminal/s")).toBe("bad_host");
    expect(parseTerminalUpgrade({ host: "bad host" }, "/ws/terminal/s")).toBe("bad_host");
    expect(parseTerminalUpgrade({ host: "a@b" }, "/ws/terminal/s")).toBe("bad_host");
    expect(parseTerminalUpgrade(ok, "/ws/terminal/%73")).toBe("encoded_session_id");
    expect(parseTerminalUpgrade(ok, "/ws/terminal/a/../b")).toBe("bad_path");
    expect(parseTerminalUpgrade(ok, "/ws/other/s")).toBe("bad_path");
    expect(parseTerminalUpgrade(ok, "/ws/terminal/s?since=-1")).toBe("bad_query");
    expect(parseTerminalUpgrade(ok, "/ws/terminal/s?agentId=a%20b")).toBe("bad_query");
    expect(parseTerminalUpgrade(ok, "/ws/terminal/s?since=1&instance=a.b")).toBe("bad_query");
  });
});

describe("the rejection log", () => {
  test("logs the first rejections of each reason, then one summary line per window, never client bytes", () => {
    const lines: string[] = [];
    let now = 0;
    const log = new RejectionLog((line) => lines.push(line), () => now, 2, 1000);
    for (let i = 0; i < 10; i++) log.record("bad_host");
    log.record("encoded_session_id");
    expect(lines).toEqual([
      "hatch: refused a terminal connection (bad_host)",
      "hatch: refused a terminal connection (bad_host)",
      "hatch: refused a terminal connection (encoded_session_id)",
    ]);
    now = 1000;
    log.record("bad_path");
    expect(lines.slice(3)).toEqual(["hatch: refused 8 more terminal connections (bad_host) in the last window", "hatch: refused a terminal connection (bad_path)"]);
  });
});
