/**
 * What went wrong with a request to Herald: the server's JSON error (`status`, `code`), or a
 * network failure (`status` 0, `code` "network").
 */
export class HeraldError extends Error {
  /**
   * @param {string} message
   * @param {{status?: number, code?: string, retryAfter?: number | null, cause?: unknown}} details
   */
  constructor(message, { status = 0, code = "network", retryAfter = null, cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "HeraldError";
    /** The HTTP status; 0 when no answer came. */
    this.status = status;
    /** Herald's error code (`unauthorized`, `rate_limited`, `not_found`, …), or `network`. */
    this.code = code;
    /** Seconds to wait before trying again (a 429's `Retry-After`), or null. */
    this.retryAfter = retryAfter;
  }

  /** Whether the same request may succeed later: no answer, a 429, or a 5xx. */
  get isTransient() {
    return this.status === 0 || this.status === 429 || this.status >= 500;
  }
}
