"""The bot's GitHub plumbing: the REST client, App and token auth, the typed webhook events, and the escaping and
templates of everything the bot posts.
"""
