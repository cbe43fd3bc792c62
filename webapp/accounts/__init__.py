"""Accounts and what vouches for them: people and their passwords and signed-in sessions
(`users`), the JSON API's bearer tokens (`tokens`), and the secrets stored encrypted
(`sealing`). Each module is imported by name; this door loads nothing."""
