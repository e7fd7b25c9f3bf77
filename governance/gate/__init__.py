"""The gate's rules (seed 004's controls that need no quorum): ``checks`` judges one record and
settles replay and idempotency from claims. Envelope keys and signatures (``governance.identity``,
``keyring``, ``signing``) and the refusal record (``governance.refusals``) are shared: others use them too."""
