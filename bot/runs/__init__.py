"""What happens after `/run`: the approved SHA, the budget, dispatch to Ray, the reconciler that follows each job,
the run's state and report, reading and attesting results, publishing them on the PR (comments, check runs,
results commit, chart), and `/verify` reproductions.
"""
