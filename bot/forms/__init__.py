"""Issue forms: reading the repository's form templates, validating preregistrations and Datashop requests, and
linking a PR's experiment files to their preregistration issues.
"""
