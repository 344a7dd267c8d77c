// The website kit's entry point: each module below is re-exported here as it lands.
export {};
