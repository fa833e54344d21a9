"""Rolling node maintenance (issue #42): a change decided as a plan before anything runs.

``plan`` is pure (the spec and the resolved pool in, the batches and each node's steps out);
running the plan against a cluster (cordon, Kueue-aware drain, the owner's apply, the health
gate, state kept for resume and rollback) is the part still to come.
"""
