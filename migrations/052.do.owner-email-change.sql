-- An owner changes their own email address by proving the new one: the link mailed there names the
-- owner who asked (change_for), and using it moves that owner to the address, verified. Until then the
-- owner keeps the old address (docs/security.md, "Owners").
ALTER TABLE owner_email_links ADD COLUMN change_for text REFERENCES users (id) ON DELETE CASCADE;
