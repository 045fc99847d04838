"""Security tests: real attacks on the plan sandbox, the webhook and the trust chain (issues 11 and 17)."""
