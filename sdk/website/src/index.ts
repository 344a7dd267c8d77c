// The website kit's entry point: each module below is re-exported here as it lands.
export { DPOP_ALGORITHMS, DpopError, memoryReplayCache, type ProofReplayCache, verifyDpop, type VerifyDpopOptions } from './dpop.js';
