/**
 * Characters a one-line label (a workflow name, a project name, a source
 * label) may not hold: C0 and C1 controls and DEL (a newline starts what reads
 * as another row of the operator's `hatch … list`, ESC drives their terminal),
 * the Unicode line and paragraph separators, and the bidirectional embedding,
 * override and isolate controls (U+202E shows a name backwards, hiding what
 * follows it).
 */
const NOT_ONE_LINE = /[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/**
 * Whether `text` is fit to show on one line of a list.
 *
 * @example
 * isOneLineText("Nightly report") // true
 * isOneLineText("Echo\nwf-7d1e  Payroll export") // false
 */
export function isOneLineText(text: string): boolean {
  return !NOT_ONE_LINE.test(text);
}
