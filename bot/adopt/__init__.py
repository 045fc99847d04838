"""Adopting openlab in a lab's own repository: ``openlab init`` (the files a lab needs), ``openlab doctor``
(is a deployment ready) and ``openlab app create`` (GitHub's App manifest flow)."""
