/**
 * A run's text as it is stored (its input, its events, its error): each NUL
 * becomes U+FFFD. SQLite's length() and substr() stop at a NUL, so a text that
 * starts with one would count as empty against a thread's character budget,
 * and list as "".
 */
export function storableText(text: string): string {
  return text.includes("\0") ? text.replaceAll("\0", "\uFFFD") : text;
}
