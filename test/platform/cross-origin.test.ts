import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { createSession, TERMINAL } from "../helpers/terminal.ts";
import { startWorld } from "../helpers/world.ts";

/** A page on another port of the same host: the same site, so the Lax cookie goes along. */
const NEIGHBOUR = "http://127.0.0.1:8888";

describe("requests from other origins' pages", () => {
  test("a form on a neighbouring origin cannot run a command, log the user out, or change anything else in their name", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
    const marker = join(world.tempDir("csrf"), "ran");
    const form = { "content-type": "application/x-www-form-urlencoded" };
    // What an HTML form sends: a browser from before Sec-Fetch-Site names only the origin, a newer one says same-site.
    for (const headers of [{ ...form, origin: NEIGHBOUR }, { ...form, origin: NEIGHBOUR, "sec-fetch-site": "same-site" }, { ...form, "sec-fetch-site": "cross-site" }]) {
      const exec = await owner.client.request("POST", `${TERMINAL}/sessions/s/exec`, `command=touch+${encodeURIComponent(marker)}`, headers);
      expect(exec.status).toBe(403);
      expect(exec.body.error.code).toBe("cross_origin_request");
      // A bodyless POST (what `fetch(url, {method: "POST", mode: "no-cors"})` sends) is refused too.
      const { "content-type": _, ...bodyless } = headers;
      expect((await owner.client.request("POST", "/api/auth/logout", undefined, bodyless)).status).toBe(403);
      const multipart = `--X\r\nContent-Disposition: form-data; name="command"\r\n\r\ntouch ${marker}\r\n--X--\r\n`;
      expect((await owner.client.request("POST", `${TERMINAL}/sessions/s/exec`, multipart, { ...headers, "content-type": "multipart/form-data; boundary=X" })).status).toBe(403);
    }
    expect(existsSync(marker)).toBe(false);
    // Still signed in, and reading is not refused (another origin's page cannot read the answer anyway).
    expect((await owner.client.request("GET", `${TERMINAL}/sessions`, undefined, { origin: NEIGHBOUR, "sec-fetch-site": "same-site" })).status).toBe(200);
  });

  test("a form's body type is refused with 415 by every route that reads JSON, even from a browser that names no origin", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
    const marker = join(world.tempDir("csrf"), "ran");
    const forms: [string, string][] = [
      ["application/x-www-form-urlencoded", `command=touch+${encodeURIComponent(marker)}`],
      ["text/plain", JSON.stringify({ command: `touch ${marker}` })],
      ["multipart/form-data; boundary=X", `--X\r\nContent-Disposition: form-data; name="command"\r\n\r\ntouch ${marker}\r\n--X--\r\n`],
    ];
    for (const [type, body] of forms) {
      for (const path of [`${TERMINAL}/sessions/s/exec`, "/api/workflows", "/api/sources", "/api/agents"]) {
        const answer = await owner.client.request("POST", path, body, { "content-type": type });
        expect({ path, type, status: answer.status, code: answer.body.error?.code }).toEqual({ path, type, status: 415, code: "unsupported_media_type" });
      }
    }
    expect(existsSync(marker)).toBe(false);
    expect((await world.anonymous().post("/api/auth/login", `{"email":"${owner.user.email}"}`, { "content-type": "text/plain" })).status).toBe(415);
  });

  test("the web host's own pages, pages from HATCH_ALLOWED_ORIGINS and clients that are not browsers are served", async () => {
    await using world = await startWorld({ HATCH_ALLOWED_ORIGINS: "https://hatch.example.com" });
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
    const exec = (headers: Record<string, string>) => owner.client.request("POST", `${TERMINAL}/sessions/s/exec`, { command: "echo ok-$((6*7))" }, headers);
    const own = new URL(world.hatch.url).origin;
    const cases: Record<string, string>[] = [{}, { origin: own }, { "sec-fetch-site": "same-origin", origin: own }, { "sec-fetch-site": "none" }, { origin: "https://hatch.example.com", "sec-fetch-site": "cross-site" }];
    for (const headers of cases) {
      const answer = await exec(headers);
      expect({ headers, status: answer.status, output: answer.body.output }).toEqual({ headers, status: 200, output: "ok-42\n" });
    }
    // A sandboxed frame's opaque origin is nobody's.
    expect((await exec({ origin: "null" })).status).toBe(403);
  });

  test("a page on an allowed origin can make the JSON calls the widget needs: its preflight is answered and the answer may be read; other pages get no such leave", async () => {
    // The widget's page on another port of the same host, which HATCH_ALLOWED_ORIGINS is for.
    const page = "http://127.0.0.1:8080";
    await using world = await startWorld({ HATCH_ALLOWED_ORIGINS: page });
    const owner = await world.signedIn(await world.project(), "owner");
    const url = `${world.hatch.url}${TERMINAL}/sessions`;
    // What a browser sends before fetch(url, {method: "POST", credentials: "include", headers: {"content-type": "application/json"}}).
    const preflight = (origin: string) =>
      fetch(url, { method: "OPTIONS", headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "content-type", "sec-fetch-mode": "cors", "sec-fetch-site": "same-site" } });
    const create = (origin: string, id: string) =>
      fetch(url, {
        method: "POST",
        headers: { cookie: owner.client.cookieHeader, origin, "content-type": "application/json", "sec-fetch-mode": "cors", "sec-fetch-site": "same-site" },
        body: JSON.stringify({ sourceSlug: "container-root", id }),
      });
    const allowed = await preflight(page);
    const answered: Record<string, string | number> = { status: allowed.status, ...Object.fromEntries([...allowed.headers].filter(([name]) => name.startsWith("access-control-"))) };
    expect(answered).toEqual({
      status: 204,
      "access-control-allow-origin": page,
      "access-control-allow-credentials": "true",
      "access-control-allow-methods": "GET, POST, PUT, PATCH, DELETE",
      "access-control-allow-headers": "content-type",
      "access-control-max-age": "600",
    });
    const created = await create(page, "w");
    expect({ status: created.status, origin: created.headers.get("access-control-allow-origin"), credentials: created.headers.get("access-control-allow-credentials") }).toEqual({ status: 201, origin: page, credentials: "true" });
    // An error answer can be read by the page too, or its user would never learn why.
    const failed = await fetch(url, { method: "POST", headers: { cookie: owner.client.cookieHeader, origin: page, "content-type": "application/json", "sec-fetch-site": "same-site" }, body: "{}" });
    expect({ status: failed.status, origin: failed.headers.get("access-control-allow-origin") }).toEqual({ status: 400, origin: page });

    const stranger = await preflight(NEIGHBOUR);
    expect(stranger.headers.get("access-control-allow-origin")).toBeNull();
    const refused = await create(NEIGHBOUR, "n");
    expect({ status: refused.status, origin: refused.headers.get("access-control-allow-origin") }).toEqual({ status: 403, origin: null });
  });
});
