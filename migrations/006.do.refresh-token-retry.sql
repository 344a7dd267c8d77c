-- A retried rotation (reuse interval, src/store/grants.ts) discards the successor its client never
-- received: that token counts as spent (presenting it later is reuse), but was never spent by a
-- client, so it is no token that may itself be retried.
ALTER TABLE refresh_tokens ADD COLUMN discarded boolean NOT NULL DEFAULT false;
