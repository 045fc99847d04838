"""Planning PR code: the door to the plan sandbox (`runner.sandbox_plan`) and the plan report posted on the PR.
"""
