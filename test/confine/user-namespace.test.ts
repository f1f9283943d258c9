/**
 * The README promises a confined program cannot "mount, or create user
 * namespaces" in either mode. A user namespace hands its creator every
 * capability inside it, and with a network namespace of its own that means
 * CAP_NET_ADMIN over nf_tables and the rest of the kernel's namespaced
 * attack surface (the usual road from an unprivileged process to root).
 * bwrap mode sets --disable-userns; Landlock alone must refuse it as well.
 */
import { describe, expect, test } from "bun:test";
import { MODES, Sandbox } from "./sandbox-fixture.ts";

/** unshare(2) by number: perl-base is on every Debian, and no exec happens between the call and the checks. */
const UNSHARE_NR = process.arch === "arm64" ? 97 : 272;
const CLONE_NEWUSER = 0x10000000;
const CLONE_NEWNET = 0x40000000;

/**
 * In one process: unshare a user and a network namespace, print the effective
 * capabilities, then try a CAP_NET_ADMIN operation (SIOCSIFFLAGS: bring lo up).
 */
const PROBE = `perl -e '
  if (syscall(${UNSHARE_NR}, ${CLONE_NEWUSER | CLONE_NEWNET}) != 0) { print "UNSHARE-REFUSED\\n"; exit 0 }
  open(my $s, "<", "/proc/self/status"); my ($cap) = grep { /^CapEff/ } <$s>; print $cap;
  socket(my $sock, 2, 2, 0) or die "socket: $!";
  my $ifr = pack("a16 s a14", "lo", 1, ""); if (ioctl($sock, 0x8914, $ifr)) { print "NET-ADMIN-HELD\\n" } else { print "NET-ADMIN-REFUSED\\n" }
'`;

describe.each(MODES)("confined bash (%s)", (mode) => {
  test("cannot create a user namespace, so it never holds capabilities (CAP_NET_ADMIN over a network namespace of its own)", async () => {
    await using sb = await Sandbox.create(mode);
    const r = await sb.run(PROBE);
    expect(r.stdout).toBe("UNSHARE-REFUSED\n");
  });
});
