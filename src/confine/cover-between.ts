/**
 * Covers are paths the sandbox hides (deny paths, host secrets) that a root
 * deeper down may still show through. A root's own rule reaches a path below
 * it only when no cover lies in between: then the cover, not the root, is what
 * stands above the path.
 */
import { isStrictlyWithin, isWithin } from "./landlock-rules.ts";

/**
 * The outermost cover strictly below `outer` and at or above `inner`, or
 * undefined when `outer`'s rule reaches `inner` uncovered.
 *
 * @example
 * coverBetween("/src", "/src/secret/pub", ["/src/secret"]) // "/src/secret"
 * coverBetween("/src/secret/pub", "/src/secret/pub/lib", ["/src/secret"]) // undefined
 */
export function coverBetween(outer: string, inner: string, covers: readonly string[]): string | undefined {
  const between = covers.filter((cover) => isStrictlyWithin(cover, outer) && isWithin(inner, cover));
  return between.sort((a, b) => a.length - b.length)[0];
}
