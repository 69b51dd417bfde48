/**
 * How core rules report a refusal: a stable `code` to branch on, the `field` it concerns and a `message` for
 * people. Core never throws for bad input and has no HTTP notion; the server maps codes onto its error table.
 * Object types rather than interfaces, so that they fit detail lists typed with an index signature.
 */
export type Issue = {
  field: string;
  code: string;
  message: string;
};

/** The outcome of reading one untrusted value. */
export type Checked<T> = { ok: true; value: T } | { ok: false; code: string; message: string };

export function accepted<T>(value: T): Checked<T> {
  return { ok: true, value };
}

export function refused<T = never>(code: string, message: string): Checked<T> {
  return { ok: false, code, message };
}
