-- The agent a website expects (login_hint at /authorize): only that agent may authenticate the sign-in.
ALTER TABLE auth_requests ADD COLUMN login_hint text;
