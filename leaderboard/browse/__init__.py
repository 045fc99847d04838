"""`openlab browse`: a read-only local web app over the store (documents, token caches, executions)."""
