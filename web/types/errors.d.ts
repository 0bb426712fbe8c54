/**
 * What went wrong with a request to Herald: the server's JSON error (`status`, `code`), or a
 * network failure (`status` 0, `code` "network").
 */
export class HeraldError extends Error {
    /**
     * @param {string} message
     * @param {{status?: number, code?: string, retryAfter?: number | null, cause?: unknown}} details
     */
    constructor(message: string, { status, code, retryAfter, cause }?: {
        status?: number;
        code?: string;
        retryAfter?: number | null;
        cause?: unknown;
    });
    /** The HTTP status; 0 when no answer came. */
    status: number;
    /** Herald's error code (`unauthorized`, `rate_limited`, `not_found`, …), or `network`. */
    code: string;
    /** Seconds to wait before trying again (a 429's `Retry-After`), or null. */
    retryAfter: number | null;
    /** Whether the same request may succeed later: no answer, a 429, or a 5xx. */
    get isTransient(): boolean;
}
