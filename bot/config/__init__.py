"""Settings and policy: the process settings (`OPENLAB_*`), the repository's `.github/openlab.yml`, the configuration
reference generated from both, run quotas, and who may start runs.
"""
