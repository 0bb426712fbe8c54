/**
 * Runs `step` one at a time: a call while it runs makes it go round once more when it ends (what
 * changed meanwhile is then in hand) and shares the outcome. Resolves to whether any round changed
 * something.
 */
export class Coalescing {
  /** @param {() => Promise<boolean>} step */
  constructor(step) {
    this.step = step;
    /** @type {Promise<boolean> | null} */
    this.running = null;
    this.again = false;
  }

  /** @returns {Promise<boolean>} */
  run() {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        let changed = false;
        do {
          this.again = false;
          changed = (await this.step()) || changed;
        } while (this.again);
        return changed;
      } finally {
        this.running = null;
      }
    })();
    return this.running;
  }
}
