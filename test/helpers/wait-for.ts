/**
 * Wait until `condition` returns a truthy value, checking on every turn of the
 * event loop (never a fixed sleep); fail with `message` after `timeoutMs`.
 */
export async function waitFor<T>(condition: () => T | Promise<T>, message = "condition", timeoutMs = 10_000): Promise<NonNullable<T>> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value as NonNullable<T>;
    if (performance.now() > deadline) throw new Error(`Timed out waiting for ${message}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
