// Numbers of the engine slot bookkeeping in retryer.js. A module of plain
// constants only, so that a bundler inlines them (esbuild keeps a module's
// own constants as variables, and inlines imported ones).

/** Attached retryers above which idle ones are parked (retryer.js). */
export const PARK_ABOVE = 512;

/**
 * Bits of a handle's marks: BUSY while its retryer asks a dynamic `enabled`
 * (user code runs while the engine is idle, so parking must wait); QUEUED
 * while in the queue of retryers to park; VACANT while it has no slot
 * (parked or disposed); KEPT for the template slot, never parked (a
 * number left in the queue by a retryer that died may name it).
 */
export const BUSY = 1;
export const QUEUED = 2;
export const VACANT = 4;
export const KEPT = 8;

/**
 * A mark of `asyncRetry`'s retryers whose state nobody can ever read (see
 * retryer.js `asyncRetry`): their flows start and succeed without reading
 * the clock. Cleared with the handle by the finalizer.
 */
export const UNTIMED = 16;

/** A retryer's pump state (retryer.js `#pump`): carrying out effects; and more were queued meanwhile. */
export const PUMPING = 1;
export const DIRTY = 2;
