/** The read path itself lives in @gm/retrieval, shared with the receipt-verifier's replays. */
export * from '@gm/retrieval';
