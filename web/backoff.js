/**
 * How long to wait before reconnection attempt `attempt` (1, 2, …): exponential from `initial`,
 * capped at `maximum`, with full jitter — a random wait below the exponential one — so that clients
 * a server dropped together do not come back together. Milliseconds.
 *
 * @param {number} attempt
 * @param {number} initial
 * @param {number} maximum
 * @param {() => number} [random]
 * @returns {number}
 */
export function reconnectDelay(attempt, initial, maximum, random = Math.random) {
  const exponential = initial * 2 ** Math.min(Math.max(attempt - 1, 0), 20);
  return Math.floor(random() * Math.min(exponential, maximum));
}
