-- Every refresh marks its token used and touches its grant; with room left on each page, PostgreSQL
-- can update those rows in place (HOT) rather than adding index entries for every new row version.
ALTER TABLE grants SET (fillfactor = 80);
ALTER TABLE refresh_tokens SET (fillfactor = 80);
ALTER TABLE auth_codes SET (fillfactor = 80);
ALTER TABLE auth_requests SET (fillfactor = 80);
