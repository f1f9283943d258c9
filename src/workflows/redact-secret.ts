/** What stands where a secret (or a piece of one) was. */
export const REDACTED = "[redacted]";

/**
 * Shortest piece of a secret that is redacted on its own. A remote that cuts
 * its message short, or masks the middle of a key (`sk-proj-abcd…wxyz`), leaves
 * pieces of it; eight characters of a random key are already a real head
 * start for a guesser, while shorter runs are common text ("sk-", "Bearer").
 */
export const MIN_SECRET_FRAGMENT = 8;

/**
 * `text` with every occurrence of `secret`, and every run of at least
 * MIN_SECRET_FRAGMENT characters that is part of it (a truncated prefix, a
 * masked key's tail), replaced by "[redacted]". For text from a remote that
 * saw the secret (an endpoint's error message), before it is stored or logged.
 *
 * @example
 * redactSecret("bad key sk-test-0123456789abcdef", "sk-test-0123456789abcdef"); // "bad key [redacted]"
 * redactSecret("bad key sk-test-0123…", "sk-test-0123456789abcdef"); // "bad key [redacted]…"
 */
export function redactSecret(text: string, secret: string): string {
  const whole = redactWholeSecret(text, secret);
  if (secret.length <= MIN_SECRET_FRAGMENT) return whole;
  let out = "";
  for (let i = 0; i < whole.length; ) {
    const length = longestPieceAt(whole, i, secret);
    if (length >= MIN_SECRET_FRAGMENT) {
      out += REDACTED;
      i += length;
    } else {
      out += whole[i];
      i += 1;
    }
  }
  return out;
}

/**
 * `text` with every whole occurrence of `secret` replaced by "[redacted]",
 * in linear time: for long text (a model's answer) where the fragment search
 * of redactSecret would cost too much, and only an echo of the whole key is
 * to be feared.
 */
export function redactWholeSecret(text: string, secret: string): string {
  return secret ? text.split(secret).join(REDACTED) : text;
}

/** Length of the longest run of `text` starting at `start` that occurs somewhere in `secret`. */
function longestPieceAt(text: string, start: number, secret: string): number {
  let best = 0;
  // Texts here are a few hundred characters and keys a few dozen: the quadratic walk costs microseconds.
  for (let from = secret.indexOf(text[start]!); from !== -1; from = secret.indexOf(text[start]!, from + 1)) {
    let length = 0;
    while (start + length < text.length && from + length < secret.length && text[start + length] === secret[from + length]) length++;
    best = Math.max(best, length);
  }
  return best;
}
