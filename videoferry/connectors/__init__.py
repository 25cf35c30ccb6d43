"""Everything that talks to the outside: API client, uploads, S3, inventories, rate limiter, webhooks."""
