/** The seeded PRNG now lives in src/core (the data generator uses it too); tests keep importing it from here. */
export { prng } from '../../src/core/prng.ts';
