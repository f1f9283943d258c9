import { describe, expect, test } from "bun:test";
import { clientAddress, normalizeAddress, RateLimiter, rateKey } from "../../src/platform/index.ts";

describe("the client address and the rate limiter", () => {
  const proxies = new Set(["10.0.0.2", "10.0.0.3"]);

  test("X-Forwarded-For counts only from a trusted proxy, read from the right past trusted hops", () => {
    expect(clientAddress("203.0.113.9", "198.51.100.1", proxies)).toBe("203.0.113.9");
    expect(clientAddress("10.0.0.2", null, proxies)).toBe("10.0.0.2");
    expect(clientAddress("10.0.0.2", "198.51.100.1", proxies)).toBe("198.51.100.1");
    expect(clientAddress("10.0.0.2", "192.0.2.66, 198.51.100.1, 10.0.0.3", proxies)).toBe("198.51.100.1");
    expect(clientAddress("::ffff:10.0.0.2", "198.51.100.1", proxies)).toBe("198.51.100.1");
    expect(clientAddress(undefined, "198.51.100.1", proxies)).toBe("unknown");
  });

  test("an address has one spelling, so a trusted IPv6 proxy matches however it was written", () => {
    expect(normalizeAddress("::ffff:203.0.113.7")).toBe("203.0.113.7");
    expect(normalizeAddress("0:0:0:0:0:ffff:cb00:7107")).toBe("203.0.113.7");
    expect(normalizeAddress("2001:DB8::0001")).toBe("2001:db8:0:0:0:0:0:1");
    expect(normalizeAddress("fe80::1%eth0")).toBe("fe80:0:0:0:0:0:0:1");
    expect(clientAddress("2001:db8:0:0:0:0:0:2", "198.51.100.1", new Set([normalizeAddress("2001:db8::2")]))).toBe("198.51.100.1");
    // Not addresses: left as they are (they then match nothing).
    for (const junk of ["1::2::3", "1:2:3:4:5:6:7:8:9", "1:2:3:4::5:6:7:8", "::ffff:1.2.3.999", "::ffff:1..3.4", "::ffff:0x1.2.3.4", "::ffff: 1.2.3.4", "1.2.3.4::", "::1.2.3.4:5", "unknown"]) {
      expect(normalizeAddress(junk)).toBe(junk);
    }
    expect(normalizeAddress("64:ff9b::192.0.2.33")).toBe("64:ff9b:0:0:0:0:c000:221");
  });

  test("an X-Forwarded-For hop written with a port, or a bracketed IPv6 hop, counts as its address, so a new source port is not a new client", () => {
    expect(clientAddress("10.0.0.2", "203.0.113.7:51234", proxies)).toBe("203.0.113.7");
    expect(rateKey(clientAddress("10.0.0.2", "203.0.113.7:51234", proxies))).toBe(rateKey(clientAddress("10.0.0.2", "203.0.113.7:51235", proxies)));
    expect(rateKey(clientAddress("10.0.0.2", "[2001:db8:1:2::1]:443", proxies))).toBe("2001:db8:1:2::/64");
    expect(normalizeAddress("[2001:db8::1]")).toBe("2001:db8:0:0:0:0:0:1");
    expect(normalizeAddress("[2001:db8::1]:443")).toBe("2001:db8:0:0:0:0:0:1");
    expect(normalizeAddress("[::ffff:203.0.113.7]:443")).toBe("203.0.113.7");
    // A trusted proxy written with a port or brackets still matches, and is still skipped.
    expect(clientAddress("10.0.0.2", "198.51.100.1:1, 10.0.0.3:8080", proxies)).toBe("198.51.100.1");
    // Brackets around something that is not an IPv6 address are not an address.
    for (const junk of ["[203.0.113.7]", "[unknown]:80", "[1::2::3]"]) expect(normalizeAddress(junk)).toBe(junk);
  });

  test("the cap counts an IPv4 address alone and an IPv6 address by its /64", () => {
    expect(rateKey("203.0.113.7")).toBe("203.0.113.7");
    expect(rateKey("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(rateKey("2001:0db8:0001:0002:ffff:ffff:ffff:ffff")).toBe("2001:db8:1:2::/64");
    expect(rateKey("2001:db8:1:3::1")).toBe("2001:db8:1:3::/64");
    expect(rateKey("::1")).toBe("0:0:0:0::/64");
  });


  test("tracking a flood of addresses stays bounded", () => {
    let now = 0;
    const limiter = new RateLimiter({ limit: 1, windowMs: 60_000, maxKeys: 100, now: () => now });
    for (let i = 0; i < 10_000; i++) limiter.take(`addr-${i}`);
    // The newest addresses are still tracked; the oldest were dropped to keep the map bounded.
    expect(limiter.take("addr-9999").ok).toBe(false);
    expect(limiter.take("addr-0").ok).toBe(true);
  });
});
