"""How events reach the bot and get applied: the webhook server (FastAPI) and its request guards, the queue worker
(in-process or its own process), the wiring of settings to ledger, clients and worker, Actions mode, redelivery after
downtime, and the public note an infrastructure failure leaves.
"""
