import { describe, expect, test } from "bun:test";
import { originPolicy } from "../../src/terminal/origin-policy.ts";

describe("the terminal WebSocket's origin policy", () => {
  const allows = originPolicy({ webPort: () => 3100, allowed: ["https://hatch.example.com"] });

  test("the web host's pages on the companion's host name, in either scheme", () => {
    expect(allows("http://10.0.0.5:3100", "10.0.0.5:3101")).toBe(true);
    expect(allows("https://10.0.0.5:3100", "10.0.0.5:3101")).toBe(true);
    expect(allows("http://[::1]:3100", "[::1]:3101")).toBe(true);
    expect(allows("http://10.0.0.5:3102", "10.0.0.5:3101")).toBe(false);
    expect(allows("http://10.0.0.6:3100", "10.0.0.5:3101")).toBe(false);
  });

  test("the companion's own origin, with the scheme's default port written or not (a proxy serving both on one host)", () => {
    expect(allows("https://term.example.org", "term.example.org")).toBe(true);
    expect(allows("https://term.example.org", "term.example.org:443")).toBe(true);
    expect(allows("http://term.example.org", "term.example.org:80")).toBe(true);
    expect(allows("https://term.example.org", "term.example.org:8443")).toBe(false);
    expect(allows("https://evil.term.example.org", "term.example.org")).toBe(false);
  });

  test("a configured origin from anywhere; a request that names no origin is not a browser's", () => {
    expect(allows("https://hatch.example.com", "10.0.0.5:3101")).toBe(true);
    expect(allows("http://hatch.example.com", "10.0.0.5:3101")).toBe(false);
    expect(allows(undefined, "10.0.0.5:3101")).toBe(true);
  });

  test("opaque and non-web origins are refused", () => {
    for (const origin of ["null", "", "file://", "chrome-extension://abc", "not a url"]) expect(allows(origin, "10.0.0.5:3101")).toBe(false);
  });
});
