import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig, localUrl } from "../src/config.ts";

describe("configuration", () => {
  test("defaults: web 3100, companion 3101, ./data, loopback", () => {
    const config = loadConfig({}, "/srv/hatch");
    expect(config).toMatchObject({ port: 3100, companionPort: 3101, dataDir: "/srv/hatch/data", host: "127.0.0.1", secretKey: null, shell: null, trustedProxies: [], allowedOrigins: [] });
  });

  test("HATCH_* values are parsed once and bad ones are named", () => {
    const config = loadConfig({ HATCH_PORT: "8080", HATCH_TRUSTED_PROXIES: "10.0.0.1, 10.0.0.2", HATCH_SHELL: "/bin/zsh" }, "/x");
    expect(config).toMatchObject({ port: 8080, trustedProxies: ["10.0.0.1", "10.0.0.2"], shell: "/bin/zsh" });
    expect(() => loadConfig({ HATCH_PORT: "http" })).toThrow(ConfigError);
    expect(() => loadConfig({ HATCH_COMPANION_PORT: "70000" })).toThrow('HATCH_COMPANION_PORT="70000"');
    // One port for both servers is a setting error, not a port some other process holds; 0 picks a free port for each.
    expect(() => loadConfig({ HATCH_PORT: "8080", HATCH_COMPANION_PORT: "8080" })).toThrow("Cannot use HATCH_PORT and HATCH_COMPANION_PORT both 8080");
    expect(() => loadConfig({ HATCH_COMPANION_PORT: "3100" })).toThrow(ConfigError);
    expect(loadConfig({ HATCH_PORT: "0", HATCH_COMPANION_PORT: "0" })).toMatchObject({ port: 0, companionPort: 0 });
    // Number(" ") and Number("0x10") are numbers; neither is a port anyone wrote.
    for (const raw of [" ", "0x10", "1e3", "-1"]) expect(() => loadConfig({ HATCH_PORT: raw })).toThrow(ConfigError);
    // A lifetime whose expiry date cannot exist (the login cookie could not be set) or that nobody means.
    expect(() => loadConfig({ HATCH_SESSION_TTL_HOURS: "3000000000" })).toThrow("from 1 to 87600");
    expect(loadConfig({ HATCH_SESSION_TTL_HOURS: "87600" }).sessionTtlHours).toBe(87600);
    for (const raw of ["0x10", "1e3", " 5", "5.0", "0", "-5"]) expect(() => loadConfig({ HATCH_SESSION_TTL_HOURS: raw })).toThrow(`HATCH_SESSION_TTL_HOURS="${raw}"`);
    // Only 0 and 1: "true" must not silently mean "not in a container".
    expect(() => loadConfig({ HATCH_IN_CONTAINER: "true" })).toThrow('HATCH_IN_CONTAINER="true"');
    expect(loadConfig({ HATCH_IN_CONTAINER: "1" }).inContainer).toBe(true);
    // Page origins exactly as a browser sends them; a URL with a path would never match one.
    expect(loadConfig({ HATCH_ALLOWED_ORIGINS: "https://hatch.example.com, http://10.0.0.5:8080/" }).allowedOrigins).toEqual(["https://hatch.example.com", "http://10.0.0.5:8080"]);
    for (const raw of ["hatch.example.com", "https://hatch.example.com/app", "ftp://hatch.example.com", "*", "https://*.example.com", "http://*:3100"]) {
      expect(() => loadConfig({ HATCH_ALLOWED_ORIGINS: raw })).toThrow(`HATCH_ALLOWED_ORIGINS entry "${raw}"`);
    }
    // A trusted proxy is an IP address: anything else would match no peer and be ignored without a word.
    expect(loadConfig({ HATCH_TRUSTED_PROXIES: "10.0.0.2, ::1, fd00::5" }).trustedProxies).toEqual(["10.0.0.2", "::1", "fd00::5"]);
    for (const raw of ["10.0.0.0/8", "proxy.internal", "10.0.0.2:8080", "[::1]", "10.0.0.256", "0.0.0.0", "::", "0:0::0"]) {
      expect(() => loadConfig({ HATCH_TRUSTED_PROXIES: `10.0.0.2, ${raw}` })).toThrow(`HATCH_TRUSTED_PROXIES entry "${raw}"`);
    }
    // An address or a name to listen on: anything else failed later as "getaddrinfo ENOTFOUND" or a bare EEXIST.
    for (const raw of ["0.0.0.0", "::", "::1", "fd00::5", "10.0.0.5", "localhost", "hatch-1.internal", "xn--bcher-kva.example", "my_service", "web_1.compose_net"]) {
      expect(loadConfig({ HATCH_HOST: raw }).host).toBe(raw);
    }
    // As written in a URL, or fully qualified: the listener gets the address or name itself.
    expect(loadConfig({ HATCH_HOST: "[::1]" }).host).toBe("::1");
    expect(loadConfig({ HATCH_HOST: "[fd00::5]" }).host).toBe("fd00::5");
    expect(loadConfig({ HATCH_HOST: "hatch.example.com." }).host).toBe("hatch.example.com");
    for (const raw of ["not a host", "http://0.0.0.0", "999.1.1.1", "10.0.0.5:8080", "[10.0.0.5]", "[::1]:3100", "[::1", "-lead.example", "a..b", "host..", ".", "host name", `${"a".repeat(64)}.example`]) {
      expect(() => loadConfig({ HATCH_HOST: raw })).toThrow(`Cannot use HATCH_HOST="${raw}": expected an IP address or a host name`);
    }
    expect(() => loadConfig({ HATCH_SECRET_KEY: "too-short-secret" })).toThrow("at least 32 characters");
    // The key itself is never echoed in the error.
    expect(() => loadConfig({ HATCH_SECRET_KEY: "too-short-secret" })).not.toThrow("too-short-secret");
    // Long enough but guessable: blank, or one character over and over.
    for (const raw of [" ".repeat(32), "a".repeat(40), "abab".repeat(10)]) {
      expect(() => loadConfig({ HATCH_SECRET_KEY: raw })).toThrow("Cannot use HATCH_SECRET_KEY: it must hold at least 8 different characters");
    }
    expect(loadConfig({ HATCH_SECRET_KEY: "correct horse battery staple, twice" }).secretKey).toBe("correct horse battery staple, twice");
  });

  test("the local URL of a server: a wildcard bind is reached on loopback, an IPv6 address is bracketed", () => {
    expect(localUrl("127.0.0.1", 3100)).toBe("http://127.0.0.1:3100");
    expect(localUrl("0.0.0.0", 3100)).toBe("http://127.0.0.1:3100");
    expect(localUrl("::", 3100)).toBe("http://127.0.0.1:3100");
    expect(localUrl("::1", 3100)).toBe("http://[::1]:3100");
    expect(localUrl("fd00::5", 8080)).toBe("http://[fd00::5]:8080");
    expect(localUrl("fe80::1%eth0", 3100)).toBe("http://[fe80::1%25eth0]:3100");
    expect(localUrl("hatch.internal", 3100)).toBe("http://hatch.internal:3100");
  });
});
