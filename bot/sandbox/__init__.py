"""A local, stateful stand-in for GitHub: the REST endpoints the bot uses (server.py) and a driver that sends
GitHub-shaped, signed webhooks to a bot (driver.py). Used by the tests and the demo; loopback only."""
