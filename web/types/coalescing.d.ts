/**
 * Runs `step` one at a time: a call while it runs makes it go round once more when it ends (what
 * changed meanwhile is then in hand) and shares the outcome. Resolves to whether any round changed
 * something.
 */
export class Coalescing {
    /** @param {() => Promise<boolean>} step */
    constructor(step: () => Promise<boolean>);
    step: () => Promise<boolean>;
    /** @type {Promise<boolean> | null} */
    running: Promise<boolean> | null;
    again: boolean;
    /** @returns {Promise<boolean>} */
    run(): Promise<boolean>;
}
