"""LM annotation for Datashop: a prompt with ``{example}``, documents in, labels out.

Engines share one interface (:class:`runner.annotation.labels.Engine`): ``local`` runs the pretrained model in
our JAX model (jitted, batched), ``openai`` calls any OpenAI-compatible endpoint (vLLM in production, or
``openlab annotate-server`` here). How a label is read, and why: see :mod:`runner.annotation.labels`.
"""
